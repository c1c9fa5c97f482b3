package stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

func TestAnswers(t *testing.T) {
	m := new(dns.Msg)
	for _, s := range []string{
		"web.example.org. 30 IN CNAME www.example.org.",
		"www.example.org. 30 IN A 192.0.2.2",
		"www.example.org. 30 IN A 192.0.2.1",
		"www.example.org. 30 IN AAAA 2001:db8::1",
		"example.org. 30 IN NS ns1.example.org.",
		"1.2.0.192.in-addr.arpa. 30 IN PTR www.example.org.",
		"example.org. 30 IN TXT \"v=spf1\" \"-all\"",
	} {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Answer = append(m.Answer, rr)
	}
	want := []string{"192.0.2.1", "192.0.2.2", "2001:db8::1", "CNAME www.example.org", "PTR www.example.org", `TXT "v=spf1" "-all"`, "ns1.example.org"}
	if diff := cmp.Diff(want, Answers(m)); diff != "" {
		t.Errorf("Answers (-want +got):\n%s", diff)
	}
	if got := Answers(nil); got != nil {
		t.Errorf("Answers(nil) = %q, want nil", got)
	}
}
