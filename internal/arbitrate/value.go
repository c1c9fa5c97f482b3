package arbitrate

import (
	"encoding/json"
	"time"
)

// claimValue is the JSON of a claim's value in etcd. The fields after Shared
// are written for shared names only.
type claimValue struct {
	Owner    string `json:"owner"`
	Shared   bool   `json:"shared,omitempty"`
	Policy   string `json:"policy,omitempty"`
	Priority *int   `json:"priority,omitempty"`
	Healthy  *bool  `json:"healthy,omitempty"`
	Since    string `json:"since,omitempty"` // RFC 3339
	Serving  *bool  `json:"serving,omitempty"`
}

// DecodeClaim reads the value of owner's claim: whether it is shared and, when
// it is, the owner's part in answering the name. A value that is not a claim
// is an unshared claim. A shared claim that says nothing of its health or
// whether it serves, as versions before the verdicts wrote them, is healthy
// and serving, since such a version always serves. The writer (publish) and
// the readers ("skylb records") decode claims with it.
func DecodeClaim(owner string, value []byte) (shared bool, share *Member) {
	var v claimValue
	if json.Unmarshal(value, &v) != nil || !v.Shared {
		return false, nil
	}
	m := Member{Owner: owner, Policy: Policy(v.Policy), Priority: DefaultPriority, Healthy: true, Serving: true}
	if m.Policy != Failover {
		m.Policy = Balanced
	}
	if v.Priority != nil {
		m.Priority = *v.Priority
	}
	if v.Healthy != nil {
		m.Healthy = *v.Healthy
	}
	if v.Serving != nil {
		m.Serving = *v.Serving
	}
	m.Since, _ = time.Parse(time.RFC3339, v.Since)
	return true, &m
}

// EncodeClaim returns the value of owner's claim, shared or not, that says
// nothing more: the value of a claim before its part in a shared name is
// known, and of every unshared one.
func EncodeClaim(owner string, shared bool) []byte {
	b, _ := json.Marshal(claimValue{Owner: owner, Shared: shared})
	return b
}

// EncodeShared returns the value of the claim of m.Owner on a name it shares
// as m.
func EncodeShared(m Member) []byte {
	v := claimValue{
		Owner: m.Owner, Shared: true, Policy: string(m.Policy),
		Priority: &m.Priority, Healthy: &m.Healthy, Serving: &m.Serving,
	}
	if !m.Since.IsZero() {
		v.Since = m.Since.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(v)
	return b
}
