package controller

import (
	"testing"
	"time"
)

func TestEndpointWatchNext(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	const grace = 30 * time.Second
	tests := []struct {
		name         string
		w            endpointWatch
		hasAddresses bool
		noEndpoints  bool
		now          time.Time
		want         endpointWatch
		wantTell     bool
		wantWait     time.Duration
	}{
		{
			name: "new Service without endpoints: held for the grace period",
			w:    endpointWatch{}, noEndpoints: true, now: t0,
			want: endpointWatch{since: t0}, wantWait: grace,
		},
		{
			name: "still none, within the grace period: held for what is left",
			w:    endpointWatch{since: t0}, noEndpoints: true, now: t0.Add(10 * time.Second),
			want: endpointWatch{since: t0}, wantWait: 20 * time.Second,
		},
		{
			name: "none arrived within the grace period: told",
			w:    endpointWatch{since: t0}, noEndpoints: true, now: t0.Add(grace),
			want: endpointWatch{since: t0}, wantTell: true,
		},
		{
			name: "endpoints arrived: nothing told, remembered",
			w:    endpointWatch{since: t0}, hasAddresses: true, now: t0.Add(time.Second),
			want: endpointWatch{had: true},
		},
		{
			name: "had endpoints and lost them: told at once",
			w:    endpointWatch{had: true}, noEndpoints: true, now: t0,
			want: endpointWatch{had: true, since: t0}, wantTell: true,
		},
		{
			name: "no endpoints problem (status mode, addresses refused): nothing changes",
			w:    endpointWatch{had: true}, now: t0,
			want: endpointWatch{had: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, tell, wait := tt.w.next(tt.hasAddresses, tt.noEndpoints, tt.now, grace)
			if got != tt.want || tell != tt.wantTell || wait != tt.wantWait {
				t.Errorf("next(%v, %v) = %+v, %v, %v; want %+v, %v, %v",
					tt.hasAddresses, tt.noEndpoints, got, tell, wait, tt.want, tt.wantTell, tt.wantWait)
			}
		})
	}
	// With no grace, a Service without endpoints is told at once.
	if _, tell, _ := (endpointWatch{}).next(false, true, t0, 0); !tell {
		t.Errorf("next with no grace period did not tell at once")
	}
}
