package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

func TestOrderHandsTheLatestDecision(t *testing.T) {
	want := func(host string) publish.Want {
		return publish.Want{Records: []skydns.Record{{Name: "www.example.org", Host: host}}}
	}
	tests := []struct {
		name string
		// decisions are numbered in this order, then handed over in the
		// order of handed (indexes into decisions).
		decisions [][]wanted
		handed    []int
		want      map[string]string // stored name -> host last set
	}{
		{
			name: "in order",
			decisions: [][]wanted{
				{{stored: "a", want: want("192.0.2.1")}},
				{{stored: "a", want: want("192.0.2.2")}},
			},
			handed: []int{0, 1},
			want:   map[string]string{"a": "192.0.2.2"},
		},
		{
			name: "the older handed last is dropped",
			decisions: [][]wanted{
				{{stored: "a", want: want("192.0.2.1")}, {stored: "b", want: want("192.0.2.3")}},
				{{stored: "a", want: want("192.0.2.2")}},
			},
			handed: []int{1, 0},
			want:   map[string]string{"a": "192.0.2.2", "b": "192.0.2.3"},
		},
		{
			name: "the older handed last of three is dropped",
			decisions: [][]wanted{
				{{stored: "b", want: want("192.0.2.3")}},
				{{stored: "a", want: want("192.0.2.1")}},
				{{stored: "a", want: want("192.0.2.2")}},
			},
			handed: []int{2, 0, 1},
			want:   map[string]string{"a": "192.0.2.2", "b": "192.0.2.3"},
		},
		{
			name: "a decision without records",
			decisions: [][]wanted{
				nil,
				{{stored: "a", want: want("192.0.2.2")}},
			},
			handed: []int{1, 0},
			want:   map[string]string{"a": "192.0.2.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o order
			seqs := make([]uint64, len(tt.decisions))
			for i := range tt.decisions {
				seqs[i] = o.begin()
			}
			got := map[string]string{}
			for _, i := range tt.handed {
				o.hand(seqs[i], tt.decisions[i], func(_, stored string, w publish.Want) { got[stored] = w.Records[0].Host })
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records set (-want +got):\n%s", diff)
			}
			if o.inFlight != 0 || len(o.last) != 0 {
				t.Errorf("after every decision was handed: inFlight = %d, last = %v, want 0 and empty", o.inFlight, o.last)
			}
		})
	}
}
