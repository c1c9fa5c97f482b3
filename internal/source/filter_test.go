package source

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFilterPermits(t *testing.T) {
	allowed, err := ParseCIDRs([]string{"192.0.2.0/24", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		filter Filter
		addr   string
		want   bool
	}{
		{"public IPv4", Filter{Denied: DefaultDeniedCIDRs}, "203.0.113.1", true},
		{"loopback", Filter{Denied: DefaultDeniedCIDRs}, "127.0.0.1", false},
		{"loopback elsewhere in 127/8", Filter{Denied: DefaultDeniedCIDRs}, "127.1.2.3", false},
		{"IPv6 loopback", Filter{Denied: DefaultDeniedCIDRs}, "::1", false},
		{"link-local", Filter{Denied: DefaultDeniedCIDRs}, "169.254.169.254", false},
		{"IPv6 link-local", Filter{Denied: DefaultDeniedCIDRs}, "fe80::1", false},
		{"unspecified", Filter{Denied: DefaultDeniedCIDRs}, "0.0.0.0", false},
		{"IPv6 unspecified", Filter{Denied: DefaultDeniedCIDRs}, "::", false},
		{"multicast", Filter{Denied: DefaultDeniedCIDRs}, "239.1.1.1", false},
		{"IPv6 multicast", Filter{Denied: DefaultDeniedCIDRs}, "ff02::1", false},
		{"private is allowed by default", Filter{Denied: DefaultDeniedCIDRs}, "10.1.2.3", true},
		{"empty deny list denies nothing", Filter{}, "127.0.0.1", true},
		{"inside the allowed list", Filter{Denied: DefaultDeniedCIDRs, Allowed: allowed}, "192.0.2.9", true},
		{"outside the allowed list", Filter{Denied: DefaultDeniedCIDRs, Allowed: allowed}, "203.0.113.1", false},
		{"allowed IPv6", Filter{Denied: DefaultDeniedCIDRs, Allowed: allowed}, "2001:db8::5", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.filter.Permits(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Errorf("Permits(%s) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	got, err := ParseCIDRs([]string{"10.0.0.1", " 10.1.2.3/8 ", "", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.1/32", "10.0.0.0/8", "fd00::/8"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ParseCIDRs = %v, want %v", got, want)
	}
	for _, bad := range []string{"10.0.0.0/33", "not-an-ip", "10.0.0/8"} {
		if _, err := ParseCIDRs([]string{bad}); err == nil {
			t.Errorf("ParseCIDRs(%q) succeeded, want an error", bad)
		}
	}
}

func statusService(ips ...string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	for _, ip := range ips {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	return svc
}

func TestDeniedAddressesAreNotPublished(t *testing.T) {
	b := NewBuilder(Config{Zones: testZones, TTL: 30, AddressSource: ModeStatus}, Listers{})
	p := b.Service(statusService("127.0.0.1", "192.0.2.1", "169.254.169.254"))
	if got := fmt.Sprint(p.Addresses); got != "[192.0.2.1]" {
		t.Errorf("Addresses = %s, want [192.0.2.1]", got)
	}
	if len(p.Problems) != 1 || p.Problems[0].Reason != ReasonAddressRefused ||
		!strings.Contains(p.Problems[0].Message, "127.0.0.1, 169.254.169.254") {
		t.Errorf("Problems = %+v, want one AddressRefused naming both refused addresses", p.Problems)
	}
}

func TestCaps(t *testing.T) {
	var ips []string
	for i := range 70 {
		ips = append(ips, fmt.Sprintf("192.0.2.%d", 100+i))
	}
	svc := statusService(ips...)
	var hosts []string
	for i := range 25 {
		hosts = append(hosts, fmt.Sprintf("h%02d.example.org", i))
	}
	svc.Annotations = map[string]string{AnnotationHostname: strings.Join(hosts, ",")}
	p := NewBuilder(Config{Zones: testZones, TTL: 30, AddressSource: ModeStatus}, Listers{}).Service(svc)

	if len(p.Names) != DefaultMaxNames || !p.Names[0].Generated || p.Names[DefaultMaxNames-1].Name != "h18.example.org" {
		t.Errorf("Names = %d, first %v, last %v; want the generated name and the first 19 annotated names", len(p.Names), p.Names[0], p.Names[len(p.Names)-1])
	}
	if len(p.Addresses) != DefaultMaxAddresses || p.Addresses[0].String() != "192.0.2.100" || p.Addresses[63].String() != "192.0.2.163" {
		t.Errorf("Addresses = %d from %v to %v; want the lowest 64", len(p.Addresses), p.Addresses[0], p.Addresses[len(p.Addresses)-1])
	}
	reasons := map[string]bool{}
	for _, pr := range p.Problems {
		reasons[pr.Reason] = true
	}
	if !reasons[ReasonTooManyNames] || !reasons[ReasonTooManyAddresses] {
		t.Errorf("Problems = %+v, want TooManyNames and TooManyAddresses", p.Problems)
	}
}
