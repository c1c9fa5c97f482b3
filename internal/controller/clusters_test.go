package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skylb/skylb/internal/arbitrate"
)

func TestShareEvents(t *testing.T) {
	until := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	answering := arbitrate.Sharing{Policy: arbitrate.Failover, Answer: []string{"east"}, Serve: true}
	standby := arbitrate.Sharing{Policy: arbitrate.Failover, Answer: []string{"east"}}
	held := arbitrate.Sharing{Policy: arbitrate.Failover, Answer: []string{"west"}, HeldUntil: until}
	tests := []struct {
		name string
		s    arbitrate.Sharing
		was  *arbitrate.Sharing
		want []string // reason: message with the name example.org
	}{
		{name: "first, answering", s: answering},
		{name: "unchanged", s: answering, was: &answering},
		{
			name: "first, standing by",
			s:    standby,
			want: []string{"ClusterStandby: this cluster stands by for example.org and publishes none of its addresses: by the policy failover it is answered by east"},
		},
		{
			name: "stops answering",
			s:    standby, was: &answering,
			want: []string{"ClusterStandby: this cluster stands by for example.org and publishes none of its addresses: by the policy failover it is answered by east"},
		},
		{
			name: "takes over",
			s:    arbitrate.Sharing{Policy: arbitrate.Failover, Answer: []string{"west"}, Serve: true}, was: &standby,
			want: []string{"ClusterAnswering: this cluster answers example.org now (policy failover; answering: west)"},
		},
		{
			name: "fails open",
			s:    arbitrate.Sharing{Policy: arbitrate.Balanced, Answer: []string{"east", "west"}, FailOpen: true, Serve: true}, was: &standby,
			want: []string{"ClusterAnswering: this cluster answers example.org again: no cluster sharing it has a healthy address, so every one answers (fail open)"},
		},
		{
			name: "held down, standing by",
			s:    held, was: &standby,
			want: []string{"ClusterHeldDown: this cluster's addresses for example.org pass their health checks again: it takes the name back at 2025-01-02T03:04:05Z, once the failback hold-down has passed"},
		},
		{name: "still held", s: held, was: &held},
		{
			name: "policies disagree",
			s:    arbitrate.Sharing{Policy: arbitrate.Balanced, Disagree: true, Answer: []string{"east", "west"}, Serve: true}, was: &answering,
			want: []string{"ClusterPolicyConflict: the clusters sharing example.org name different skylb.io/cluster-policy: every one of them uses balanced until they agree"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range shareEvents(tt.s, tt.was) {
				got = append(got, e.reason+": "+fmt.Sprintf(e.message, "example.org"))
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("shareEvents mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
