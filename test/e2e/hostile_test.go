package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A namespace cannot take or shadow another namespace's names, and cannot point
// a name at an address skylb refuses; the owner's answers stay unchanged.
func TestHostileNamespace(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	namespace(t, "owner")
	namespace(t, "tenant")
	metallb(t, "owner", "bank", []corev1.LoadBalancerIngress{{IP: "203.0.113.90"}},
		annotate("skylb.io/hostname", "bank.example.org,www.vault.example.org,example.org"))
	within(t, quick, "bank.example.org", "203.0.113.90")
	within(t, quick, "www.vault.example.org", "203.0.113.90")
	within(t, quick, "example.org", "203.0.113.90")
	time.Sleep(10 * time.Millisecond) // the tenant's objects are strictly newer

	long := strings.Repeat("a", 64) + ".example.org"
	longName := strings.Repeat("abcdefghi.", 26) + "example.org" // 271 characters
	attempts := []struct {
		host   string
		reason string
	}{
		{"bank.example.org", "HostnameConflict"},
		{"login.bank.example.org", "HostnameConflict"},
		{"vault.example.org", "HostnameConflict"},
		{"example.org", "ApexRefused"},
		{"BANK.Example.ORG.", "HostnameConflict"},
		{"bank.owner.example.org", "HostnameConflict"},
		{"*.bank.example.org", "InvalidHostname"},
		{"any.bank.example.org", "InvalidHostname"},
		{"bänk.example.org", "InvalidHostname"},
		{long, "InvalidHostname"},
		{longName, "InvalidHostname"},
		{"ns1.ns.dns.example.org", "InvalidHostname"},
	}
	var hosts []string
	for _, a := range attempts {
		hosts = append(hosts, a.host)
	}
	metallb(t, "tenant", "attack", []corev1.LoadBalancerIngress{{IP: "198.51.100.66"}, {IP: "127.0.0.1"}},
		annotate("skylb.io/hostname", strings.Join(hosts, ",")),
		annotate("skylb.io/ttl", "5"))
	within(t, quick, "attack.tenant.example.org", "198.51.100.66")
	for _, a := range attempts {
		text := strings.TrimSuffix(strings.ToLower(a.host), ".")
		if len(text) > 40 {
			text = text[:40]
		}
		expectEvent(t, "tenant", "attack", a.reason, text)
	}
	expectEvent(t, "tenant", "attack", "AddressRefused", "127.0.0.1")

	// The owner's answers, and those of names beneath it, are unchanged.
	within(t, quick, "bank.example.org", "203.0.113.90")
	within(t, quick, "www.vault.example.org", "203.0.113.90")
	within(t, quick, "example.org", "203.0.113.90")
	within(t, quick, "login.bank.example.org")
	within(t, quick, "bank.owner.example.org", "203.0.113.90")

	// Punycode is a name of its own, not a look-alike of another: it is published.
	metallb(t, "tenant", "idn", []corev1.LoadBalancerIngress{{IP: "198.51.100.67"}},
		annotate("skylb.io/hostname", "xn--bnk-sna.example.org"))
	within(t, quick, "xn--bnk-sna.example.org", "198.51.100.67")
}
