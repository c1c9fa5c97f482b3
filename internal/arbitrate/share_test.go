package arbitrate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestShare(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	const hold = time.Minute
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	member := func(owner string, p Policy, prio int, healthy, serving bool) Member {
		return Member{Owner: owner, Policy: p, Priority: prio, Healthy: healthy, Serving: serving, Since: ago(time.Hour)}
	}
	tests := []struct {
		name    string
		owner   string
		members []Member
		want    Sharing
	}{
		{
			name:    "alone, healthy",
			owner:   "a",
			members: []Member{member("a", Balanced, 100, true, false)},
			want:    Sharing{Policy: Balanced, Answer: []string{"a"}, Serve: true},
		},
		{
			name:    "alone, unhealthy: fail open",
			owner:   "a",
			members: []Member{member("a", Failover, 10, false, true)},
			want:    Sharing{Policy: Failover, Answer: []string{"a"}, FailOpen: true, Serve: true},
		},
		{
			name:    "an empty policy is balanced",
			owner:   "a",
			members: []Member{member("a", "", 100, true, true), member("b", Balanced, 100, true, true)},
			want:    Sharing{Policy: Balanced, Answer: []string{"a", "b"}, Serve: true},
		},
		{
			name:    "balanced: both healthy answer",
			owner:   "b",
			members: []Member{member("a", Balanced, 10, true, true), member("b", Balanced, 20, true, false)},
			want:    Sharing{Policy: Balanced, Answer: []string{"a", "b"}, Serve: true},
		},
		{
			name:    "balanced: an unhealthy cluster withdraws while another healthy one answers",
			owner:   "a",
			members: []Member{member("a", Balanced, 100, false, true), member("b", Balanced, 100, true, true)},
			want:    Sharing{Policy: Balanced, Answer: []string{"b"}, Serve: false},
		},
		{
			name:    "balanced: an unhealthy cluster keeps answering until the healthy one serves",
			owner:   "a",
			members: []Member{member("a", Balanced, 100, false, true), member("b", Balanced, 100, true, false)},
			want:    Sharing{Policy: Balanced, Answer: []string{"b"}, Serve: true},
		},
		{
			name:    "balanced: the healthy one takes over from an unhealthy one",
			owner:   "b",
			members: []Member{member("a", Balanced, 100, false, true), member("b", Balanced, 100, true, false)},
			want:    Sharing{Policy: Balanced, Answer: []string{"b"}, Serve: true},
		},
		{
			name:    "balanced: none healthy, every cluster answers",
			owner:   "b",
			members: []Member{member("a", Balanced, 100, false, true), member("b", Balanced, 100, false, false)},
			want:    Sharing{Policy: Balanced, Answer: []string{"a", "b"}, FailOpen: true, Serve: true},
		},
		{
			name:    "failover: the preferred cluster answers",
			owner:   "a",
			members: []Member{member("a", Failover, 10, true, false), member("b", Failover, 20, true, false)},
			want:    Sharing{Policy: Failover, Answer: []string{"a"}, Serve: true},
		},
		{
			name:    "failover: the other stands by",
			owner:   "b",
			members: []Member{member("a", Failover, 10, true, true), member("b", Failover, 20, true, false)},
			want:    Sharing{Policy: Failover, Answer: []string{"a"}},
		},
		{
			name:    "failover: the other hands over once the preferred one serves",
			owner:   "b",
			members: []Member{member("a", Failover, 10, true, true), member("b", Failover, 20, true, true)},
			want:    Sharing{Policy: Failover, Answer: []string{"a"}},
		},
		{
			name:    "failover: the other keeps answering until the preferred one serves",
			owner:   "b",
			members: []Member{member("a", Failover, 10, true, false), member("b", Failover, 20, true, true)},
			want:    Sharing{Policy: Failover, Answer: []string{"a"}, Serve: true},
		},
		{
			name:    "failover: the next takes over from an unhealthy preferred one",
			owner:   "b",
			members: []Member{member("a", Failover, 10, false, true), member("b", Failover, 20, true, false)},
			want:    Sharing{Policy: Failover, Answer: []string{"b"}, Serve: true},
		},
		{
			name:    "failover: the unhealthy preferred one keeps answering until the next serves",
			owner:   "a",
			members: []Member{member("a", Failover, 10, false, true), member("b", Failover, 20, true, false)},
			want:    Sharing{Policy: Failover, Answer: []string{"b"}, Serve: true},
		},
		{
			name:    "failover: the unhealthy preferred one withdraws once the next serves",
			owner:   "a",
			members: []Member{member("a", Failover, 10, false, true), member("b", Failover, 20, true, true)},
			want:    Sharing{Policy: Failover, Answer: []string{"b"}},
		},
		{
			name:  "failover: three clusters, the first two unhealthy",
			owner: "c",
			members: []Member{
				member("a", Failover, 10, false, false), member("b", Failover, 20, false, true), member("c", Failover, 30, true, false),
			},
			want: Sharing{Policy: Failover, Answer: []string{"c"}, Serve: true},
		},
		{
			name:  "failover: equal priorities answer together",
			owner: "b",
			members: []Member{
				member("a", Failover, 10, true, true), member("b", Failover, 10, true, false), member("c", Failover, 20, true, false),
			},
			want: Sharing{Policy: Failover, Answer: []string{"a", "b"}, Serve: true},
		},
		{
			name:    "failover: none healthy, every cluster answers",
			owner:   "b",
			members: []Member{member("a", Failover, 10, false, true), member("b", Failover, 20, false, false)},
			want:    Sharing{Policy: Failover, Answer: []string{"a", "b"}, FailOpen: true, Serve: true},
		},
		{
			name:  "failover: healthy again within the hold-down, the preferred one waits",
			owner: "a",
			members: []Member{
				{Owner: "a", Policy: Failover, Priority: 10, Healthy: true, Since: ago(10 * time.Second)},
				member("b", Failover, 20, true, true),
			},
			want: Sharing{Policy: Failover, Answer: []string{"a"}, HeldUntil: now.Add(50 * time.Second)},
		},
		{
			name:  "failover: the answering one keeps serving while the preferred one is held",
			owner: "b",
			members: []Member{
				{Owner: "a", Policy: Failover, Priority: 10, Healthy: true, Since: ago(10 * time.Second)},
				member("b", Failover, 20, true, true),
			},
			want: Sharing{Policy: Failover, Answer: []string{"a"}, Serve: true},
		},
		{
			name:  "failover: the hold-down passed, the preferred one takes the name back",
			owner: "a",
			members: []Member{
				{Owner: "a", Policy: Failover, Priority: 10, Healthy: true, Since: ago(hold)},
				member("b", Failover, 20, true, true),
			},
			want: Sharing{Policy: Failover, Answer: []string{"a"}, Serve: true},
		},
		{
			name:  "failover: no hold-down when the answering one is unhealthy",
			owner: "a",
			members: []Member{
				{Owner: "a", Policy: Failover, Priority: 10, Healthy: true, Since: ago(time.Second)},
				member("b", Failover, 20, false, true),
			},
			want: Sharing{Policy: Failover, Answer: []string{"a"}, Serve: true},
		},
		{
			name:  "failover: no hold-down when nobody answers",
			owner: "a",
			members: []Member{
				{Owner: "a", Policy: Failover, Priority: 10, Healthy: true, Since: ago(time.Second)},
				member("b", Failover, 20, true, false),
			},
			want: Sharing{Policy: Failover, Answer: []string{"a"}, Serve: true},
		},
		{
			name:  "balanced: no hold-down",
			owner: "a",
			members: []Member{
				{Owner: "a", Policy: Balanced, Priority: 10, Healthy: true, Since: ago(time.Second)},
				member("b", Balanced, 20, true, true),
			},
			want: Sharing{Policy: Balanced, Answer: []string{"a", "b"}, Serve: true},
		},
		{
			name:    "disagreeing policies fall back to balanced",
			owner:   "b",
			members: []Member{member("a", Failover, 10, true, true), member("b", Balanced, 20, true, false)},
			want:    Sharing{Policy: Balanced, Disagree: true, Answer: []string{"a", "b"}, Serve: true},
		},
		{
			name:    "an owner that is no member serves nothing",
			owner:   "c",
			members: []Member{member("a", Failover, 10, true, true)},
			want:    Sharing{Policy: Failover, Answer: []string{"a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Share(tt.owner, tt.members, now, hold)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Share(%s) mismatch (-want +got):\n%s", tt.owner, diff)
			}
		})
	}
}

// TestShareAgrees checks that the clusters of a name, each deciding from the
// same claims, agree on who answers, and that at least one of them serves
// whatever the states: no state of the claims leaves the name unanswered
// while a member serves.
func TestShareAgrees(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	owners := []string{"a", "b", "c"}
	priorities := []int{10, 20, 10}
	for _, policy := range []Policy{Balanced, Failover} {
		// Every combination of healthy, serving and recent for three members.
		for bits := range 1 << 9 {
			var members []Member
			anyServing := false
			for i, o := range owners {
				m := Member{Owner: o, Policy: policy, Priority: priorities[i],
					Healthy: bits>>(3*i)&1 == 1, Serving: bits>>(3*i+1)&1 == 1, Since: now.Add(-time.Hour)}
				if bits>>(3*i+2)&1 == 1 {
					m.Since = now.Add(-time.Second)
				}
				anyServing = anyServing || m.Serving
				members = append(members, m)
			}
			var answer []string
			serving := 0
			for i, o := range owners {
				s := Share(o, members, now, time.Minute)
				if i == 0 {
					answer = s.Answer
				} else if !cmp.Equal(answer, s.Answer) {
					t.Fatalf("%s %09b: %s answers %v, a %v", policy, bits, o, s.Answer, answer)
				}
				if s.Serve {
					serving++
				}
			}
			if anyServing && serving == 0 {
				t.Errorf("%s %09b: a member serves now, and none would serve after deciding", policy, bits)
			}
		}
	}
}
