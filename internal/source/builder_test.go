package source

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/skydns"
)

var (
	testZones   = dnsname.Zones{"example.org", "dev.example.org", "example.com"}
	testConfig  = Config{Zones: testZones, TTL: 300, DefaultNamespace: "default", AddressSource: ModeStatus, ApexNamespaces: []string{"shop", "infra"}}
	testCreated = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
)

// pubFields is Publication without its Equal method, which cmp would otherwise call.
type pubFields Publication

// diffPub compares publications: UID is checked on its own (TestRef), problem messages by
// checkProblemMessages, and nil and empty slices are the same.
func diffPub(want, got *Publication) string {
	return cmp.Diff((*pubFields)(want), (*pubFields)(got), pubOpts)
}

var pubOpts = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmpopts.IgnoreFields(pubFields{}, "UID", "Mode", "Health", "HealthPort", "Select", "ClusterPolicy", "ClusterPriority"),
	cmpopts.IgnoreFields(Problem{}, "Message"),
	cmpopts.EquateEmpty(),
}

// checkProblemMessages checks that every problem has a message containing the
// message of the wanted problem, when one is given.
func checkProblemMessages(t *testing.T, want, got *Publication) {
	t.Helper()
	if want == nil || got == nil || len(want.Problems) != len(got.Problems) {
		return // the diff reports it
	}
	for i, p := range got.Problems {
		if p.Message == "" || !strings.Contains(p.Message, want.Problems[i].Message) {
			t.Errorf("Problems[%d].Message = %q, want a message containing %q", i, p.Message, want.Problems[i].Message)
		}
	}
}

type svcOpt func(*corev1.Service)

func newService(ns, name string, opts ...svcOpt) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID("uid-" + ns + "-" + name),
			CreationTimestamp: metav1.NewTime(testCreated),
		},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	for _, o := range opts {
		o(svc)
	}
	return svc
}

func annotate(kv ...string) svcOpt {
	return func(s *corev1.Service) { s.Annotations = annotations(kv...) }
}

func annotations(kv ...string) map[string]string {
	m := make(map[string]string)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func ips(ips ...string) svcOpt {
	return func(s *corev1.Service) {
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
	}
}

func hostnames(hs ...string) svcOpt {
	return func(s *corev1.Service) {
		for _, h := range hs {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{Hostname: h})
		}
	}
}

func serviceType(typ corev1.ServiceType) svcOpt {
	return func(s *corev1.Service) { s.Spec.Type = typ }
}

func gen(name, zone string) Name {
	return Name{Placed: dnsname.Placed{Name: name, Zone: zone}, Generated: true}
}

func host(name, zone string) Name {
	return Name{Placed: dnsname.Placed{Name: name, Zone: zone}}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func problem(reason, message string) Problem { return Problem{Reason: reason, Message: message} }

// svcPub is the publication of a Service with the defaults of newService.
func svcPub(ns, name string, p Publication) *Publication {
	p.Key = skydns.ObjectKey{Kind: KindService, Namespace: ns, Name: name}
	p.Source = p.Key.String()
	p.Created = testCreated
	if p.TTL == 0 {
		p.TTL = testConfig.TTL
	}
	return &p
}

func TestService(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want *Publication
	}{
		{
			name: "generated name",
			svc:  newService("shop", "web", ips("192.0.2.10")),
			want: svcPub("shop", "web", Publication{
				Names:     []Name{gen("web.shop.example.org", "example.org")},
				Addresses: addrs("192.0.2.10"),
			}),
		},
		{
			name: "no status yet",
			svc:  newService("shop", "web"),
			want: svcPub("shop", "web", Publication{Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "default namespace",
			svc:  newService("default", "web", ips("192.0.2.10")),
			want: svcPub("default", "web", Publication{
				Names:     []Name{gen("web.default.example.org", "example.org"), gen("web.example.org", "example.org")},
				Addresses: addrs("192.0.2.10"),
			}),
		},
		{
			name: "generated name in a nested zone",
			svc:  newService("dev", "api"),
			want: svcPub("dev", "api", Publication{Names: []Name{gen("api.dev.example.org", "dev.example.org")}}),
		},
		{
			name: "skylb hostname",
			svc:  newService("shop", "web", annotate(AnnotationHostname, "shop.example.com")),
			want: svcPub("shop", "web", Publication{
				Names: []Name{gen("web.shop.example.org", "example.org"), host("shop.example.com", "example.com")},
			}),
		},
		{
			name: "external-dns alpha hostname",
			svc:  newService("shop", "web", annotate("external-dns.alpha.kubernetes.io/hostname", "shop.example.com")),
			want: svcPub("shop", "web", Publication{
				Names: []Name{gen("web.shop.example.org", "example.org"), host("shop.example.com", "example.com")},
			}),
		},
		{
			name: "external-dns hostname",
			svc:  newService("shop", "web", annotate("external-dns.kubernetes.io/hostname", "shop.example.com")),
			want: svcPub("shop", "web", Publication{
				Names: []Name{gen("web.shop.example.org", "example.org"), host("shop.example.com", "example.com")},
			}),
		},
		{
			name: "all hostname annotations in order",
			svc: newService("shop", "web", annotate(
				"external-dns.kubernetes.io/hostname", "c.example.com",
				"external-dns.alpha.kubernetes.io/hostname", "b.example.com,a.example.com",
				AnnotationHostname, "d.example.com",
			)),
			want: svcPub("shop", "web", Publication{
				Names: []Name{
					gen("web.shop.example.org", "example.org"),
					host("d.example.com", "example.com"),
					host("b.example.com", "example.com"),
					host("a.example.com", "example.com"),
					host("c.example.com", "example.com"),
				},
			}),
		},
		{
			name: "comma list with spaces and duplicates",
			svc: newService("shop", "web", annotate(
				AnnotationHostname, " a.example.org , B.example.com.,,  ,a.example.org,A.Example.Org.",
				"external-dns.alpha.kubernetes.io/hostname", "b.example.com, web.shop.example.org",
			)),
			want: svcPub("shop", "web", Publication{
				Names: []Name{
					gen("web.shop.example.org", "example.org"),
					host("a.example.org", "example.org"),
					host("b.example.com", "example.com"),
				},
			}),
		},
		{
			name: "annotation repeating a generated name keeps it generated",
			svc:  newService("default", "web", annotate(AnnotationHostname, "web.example.org")),
			want: svcPub("default", "web", Publication{
				Names: []Name{gen("web.default.example.org", "example.org"), gen("web.example.org", "example.org")},
			}),
		},
		{
			name: "nested zone and apex",
			svc:  newService("shop", "web", annotate(AnnotationHostname, "api.dev.example.org,example.com,dev.example.org")),
			want: svcPub("shop", "web", Publication{
				Names: []Name{
					gen("web.shop.example.org", "example.org"),
					host("api.dev.example.org", "dev.example.org"),
					host("example.com", "example.com"),
					host("dev.example.org", "dev.example.org"),
				},
			}),
		},
		{
			name: "apex from a namespace not allowed",
			svc:  newService("evil", "web", annotate(AnnotationHostname, "example.org,www.example.org,dev.example.org,example.com")),
			want: svcPub("evil", "web", Publication{
				Names: []Name{gen("web.evil.example.org", "example.org"), host("www.example.org", "example.org")},
				Problems: []Problem{
					problem(ReasonApexRefused, `"example.org" is not published: it is the apex of zone example.org`),
					problem(ReasonApexRefused, `"dev.example.org" is not published: it is the apex of zone dev.example.org`),
					problem(ReasonApexRefused, `"example.com" is not published: it is the apex of zone example.com`),
				},
			}),
		},
		{
			name: "names outside the zones",
			svc:  newService("shop", "web", annotate(AnnotationHostname, "shop.example.net,example.org.evil.net,org")),
			want: svcPub("shop", "web", Publication{
				Names: []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{
					problem(ReasonInvalidHostname, "shop.example.net"),
					problem(ReasonInvalidHostname, "example.org.evil.net"),
					problem(ReasonInvalidHostname, `"org"`),
				},
			}),
		},
		{
			name: "invalid and wildcard names",
			svc:  newService("shop", "web", annotate(AnnotationHostname, "*.example.org,any.example.org,my_shop.example.org,ok.example.org")),
			want: svcPub("shop", "web", Publication{
				Names: []Name{gen("web.shop.example.org", "example.org"), host("ok.example.org", "example.org")},
				Problems: []Problem{
					problem(ReasonInvalidHostname, "*.example.org"),
					problem(ReasonInvalidHostname, "any.example.org"),
					problem(ReasonInvalidHostname, "my_shop.example.org"),
				},
			}),
		},
		{
			name: "reserved names",
			svc:  newService("shop", "web", annotate(AnnotationHostname, "dns.example.org,ns1.dns.example.com,apex.dns.dev.example.org,dnsx.example.org")),
			want: svcPub("shop", "web", Publication{
				Names: []Name{gen("web.shop.example.org", "example.org"), host("dnsx.example.org", "example.org")},
				Problems: []Problem{
					problem(ReasonInvalidHostname, "dns.example.org"),
					problem(ReasonInvalidHostname, "ns1.dns.example.com"),
					problem(ReasonInvalidHostname, "apex.dns.dev.example.org"),
				},
			}),
		},
		{
			name: "generated name in the reserved subtree",
			svc:  newService("dns", "web"),
			want: svcPub("dns", "web", Publication{
				Problems: []Problem{problem(ReasonInvalidHostname, "web.dns.example.org")},
			}),
		},
		{
			name: "default-namespace name is reserved",
			svc:  newService("default", "dns"),
			want: svcPub("default", "dns", Publication{
				Names:    []Name{gen("dns.default.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidHostname, "dns.example.org")},
			}),
		},
		{
			name: "IPv4, IPv6 and IPv4-mapped IPv6 sorted and deduplicated",
			svc:  newService("shop", "web", ips("2001:db8::1", "192.0.2.20", "::ffff:192.0.2.10", "192.0.2.10", "2001:DB8::1", "192.0.2.20")),
			want: svcPub("shop", "web", Publication{
				Names:     []Name{gen("web.shop.example.org", "example.org")},
				Addresses: addrs("192.0.2.10", "192.0.2.20", "2001:db8::1"),
			}),
		},
		{
			name: "invalid addresses",
			svc:  newService("shop", "web", ips("192.0.2.300", "fe80::1%eth0", "192.0.2.010", "not-an-ip", "192.0.2.1")),
			want: svcPub("shop", "web", Publication{
				Names:     []Name{gen("web.shop.example.org", "example.org")},
				Addresses: addrs("192.0.2.1"),
				Problems: []Problem{
					problem(ReasonInvalidAddress, "192.0.2.300"),
					problem(ReasonInvalidAddress, "fe80::1%eth0"),
					problem(ReasonInvalidAddress, "192.0.2.010"),
					problem(ReasonInvalidAddress, "not-an-ip"),
				},
			}),
		},
		{
			name: "hostname status entries",
			svc:  newService("shop", "web", hostnames("LB-2.elb.example.net.", "lb-1.elb.example.net", "lb-2.elb.example.net", "bad_host.example.net", "*.example.net")),
			want: svcPub("shop", "web", Publication{
				Names:   []Name{gen("web.shop.example.org", "example.org")},
				Targets: []string{"lb-1.elb.example.net", "lb-2.elb.example.net"},
				Problems: []Problem{
					problem(ReasonInvalidAddress, "bad_host.example.net"),
					problem(ReasonInvalidAddress, "*.example.net"),
				},
			}),
		},
		{
			name: "addresses and targets both kept",
			svc:  newService("shop", "web", ips("192.0.2.10"), hostnames("lb.example.net")),
			want: svcPub("shop", "web", Publication{
				Names:     []Name{gen("web.shop.example.org", "example.org")},
				Addresses: addrs("192.0.2.10"),
				Targets:   []string{"lb.example.net"},
			}),
		},
		{
			name: "entry with IP and hostname uses the IP",
			svc: newService("shop", "web", func(s *corev1.Service) {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10", Hostname: "lb.example.net"}, {}}
			}),
			want: svcPub("shop", "web", Publication{
				Names:     []Name{gen("web.shop.example.org", "example.org")},
				Addresses: addrs("192.0.2.10"),
			}),
		},
		{
			name: "TTL in seconds",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "60")),
			want: svcPub("shop", "web", Publication{TTL: 60, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "TTL with spaces",
			svc:  newService("shop", "web", annotate(AnnotationTTL, " 45 ")),
			want: svcPub("shop", "web", Publication{TTL: 45, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "TTL as a duration",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "1m30s")),
			want: svcPub("shop", "web", Publication{TTL: 90, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "TTL duration truncated to seconds",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "1.9s")),
			want: svcPub("shop", "web", Publication{TTL: 1, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "TTL of one day",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "24h")),
			want: svcPub("shop", "web", Publication{TTL: MaxTTL, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "TTL of one second",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "1")),
			want: svcPub("shop", "web", Publication{TTL: 1, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "external-dns alpha TTL",
			svc:  newService("shop", "web", annotate("external-dns.alpha.kubernetes.io/ttl", "120")),
			want: svcPub("shop", "web", Publication{TTL: 120, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "external-dns TTL",
			svc:  newService("shop", "web", annotate("external-dns.kubernetes.io/ttl", "2m")),
			want: svcPub("shop", "web", Publication{TTL: 120, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "skylb TTL before external-dns TTL",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "10", "external-dns.alpha.kubernetes.io/ttl", "20", "external-dns.kubernetes.io/ttl", "30")),
			want: svcPub("shop", "web", Publication{TTL: 10, Names: []Name{gen("web.shop.example.org", "example.org")}}),
		},
		{
			name: "invalid TTL",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "soon")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidTTL, AnnotationTTL)},
			}),
		},
		{
			name: "empty TTL",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidTTL, "")},
			}),
		},
		{
			name: "zero TTL",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "0")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidTTL, "300")},
			}),
		},
		{
			name: "negative TTL",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "-5")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidTTL, "")},
			}),
		},
		{
			name: "TTL under a second",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "500ms")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidTTL, "")},
			}),
		},
		{
			name: "TTL too large",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "86401")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidTTL, "86401")},
			}),
		},
		{
			name: "TTL duration too large",
			svc:  newService("shop", "web", annotate("external-dns.alpha.kubernetes.io/ttl", "48h")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidTTL, "external-dns.alpha.kubernetes.io/ttl")},
			}),
		},
		{
			name: "TTL beyond 64 bits",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "99999999999999999999")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidTTL, "")},
			}),
		},
		{
			name: "problems in order: TTL, names, addresses",
			svc:  newService("shop", "web", annotate(AnnotationTTL, "x", AnnotationHostname, "web.example.net"), ips("bad")),
			want: svcPub("shop", "web", Publication{
				Names: []Name{gen("web.shop.example.org", "example.org")},
				Problems: []Problem{
					problem(ReasonInvalidTTL, ""),
					problem(ReasonInvalidHostname, "web.example.net"),
					problem(ReasonInvalidAddress, "bad"),
				},
			}),
		},
		{name: "ClusterIP", svc: newService("shop", "web", serviceType(corev1.ServiceTypeClusterIP), ips("192.0.2.10")), want: nil},
		{name: "NodePort", svc: newService("shop", "web", serviceType(corev1.ServiceTypeNodePort)), want: nil},
		{name: "ExternalName", svc: newService("shop", "web", serviceType(corev1.ServiceTypeExternalName)), want: nil},
		{name: "no type", svc: newService("shop", "web", serviceType(""), annotate(AnnotationHostname, "web.example.org")), want: nil},
	}
	b := NewBuilder(testConfig, Listers{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.Service(tt.svc)
			if diff := diffPub(tt.want, got); diff != "" {
				t.Errorf("Service(%s/%s) mismatch (-want +got):\n%s", tt.svc.Namespace, tt.svc.Name, diff)
			}
			checkProblemMessages(t, tt.want, got)
			if again := b.Service(tt.svc); !again.Equal(got) {
				t.Errorf("Service(%s/%s) = %+v then %+v, want equal publications", tt.svc.Namespace, tt.svc.Name, got, again)
			}
		})
	}
}

func TestServiceWithoutDefaultNamespace(t *testing.T) {
	cfg := testConfig
	cfg.DefaultNamespace = ""
	got := NewBuilder(cfg, Listers{}).Service(newService("default", "web"))
	want := svcPub("default", "web", Publication{Names: []Name{gen("web.default.example.org", "example.org")}})
	if diff := diffPub(want, got); diff != "" {
		t.Errorf("Service(default/web) without a default namespace mismatch (-want +got):\n%s", diff)
	}
}

func TestServiceGeneratedNamesInFirstZone(t *testing.T) {
	cfg := testConfig
	cfg.Zones = dnsname.Zones{"example.com", "example.org"}
	got := NewBuilder(cfg, Listers{}).Service(newService("default", "web"))
	want := svcPub("default", "web", Publication{
		Names: []Name{gen("web.default.example.com", "example.com"), gen("web.example.com", "example.com")},
	})
	if diff := diffPub(want, got); diff != "" {
		t.Errorf("Service(default/web) mismatch (-want +got):\n%s", diff)
	}
}

func TestRef(t *testing.T) {
	b := NewBuilder(testConfig, Listers{})
	svc := b.Service(newService("shop", "web"))
	wantSvc := corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: "shop", Name: "web", UID: "uid-shop-web"}
	if got, ok := svc.Ref(); !ok {
		t.Error("Service(shop/web).Ref() refused")
	} else if diff := cmp.Diff(&wantSvc, got); diff != "" {
		t.Errorf("Service(shop/web).Ref mismatch (-want +got):\n%s", diff)
	}
	ing := b.Ingress(newIngress("shop", "front"))
	wantIng := corev1.ObjectReference{Kind: "Ingress", APIVersion: "networking.k8s.io/v1", Namespace: "shop", Name: "front", UID: "uid-shop-front"}
	if got, ok := ing.Ref(); !ok {
		t.Error("Ingress(shop/front).Ref() refused")
	} else if diff := cmp.Diff(&wantIng, got); diff != "" {
		t.Errorf("Ingress(shop/front).Ref mismatch (-want +got):\n%s", diff)
	}
}

// TestRefOfUnknownKind: a publication of a kind that is not one of Kinds
// has no reference, rather than one that names another kind.
func TestRefOfUnknownKind(t *testing.T) {
	for _, kind := range []string{"", "widget", "Service"} {
		p := &Publication{Key: skydns.ObjectKey{Kind: kind, Namespace: "shop", Name: "web"}}
		if ref, ok := p.Ref(); ok || ref != nil {
			t.Errorf("Ref() of kind %q = %+v, %v; want nil, false", kind, ref, ok)
		}
	}
}

type ingOpt func(*networkingv1.Ingress)

func newIngress(ns, name string, opts ...ingOpt) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID("uid-" + ns + "-" + name),
			CreationTimestamp: metav1.NewTime(testCreated),
		},
	}
	for _, o := range opts {
		o(ing)
	}
	return ing
}

func rules(hosts ...string) ingOpt {
	return func(ing *networkingv1.Ingress) {
		for _, h := range hosts {
			ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h})
		}
	}
}

func tls(hosts ...string) ingOpt {
	return func(ing *networkingv1.Ingress) {
		ing.Spec.TLS = append(ing.Spec.TLS, networkingv1.IngressTLS{Hosts: hosts, SecretName: "cert"})
	}
}

func ingAnnotate(kv ...string) ingOpt {
	return func(ing *networkingv1.Ingress) { ing.Annotations = annotations(kv...) }
}

func ingStatus(entries ...networkingv1.IngressLoadBalancerIngress) ingOpt {
	return func(ing *networkingv1.Ingress) { ing.Status.LoadBalancer.Ingress = entries }
}

func ingPub(ns, name string, p Publication) *Publication {
	p.Key = skydns.ObjectKey{Kind: KindIngress, Namespace: ns, Name: name}
	p.Source = p.Key.String()
	p.Created = testCreated
	if p.TTL == 0 {
		p.TTL = testConfig.TTL
	}
	return &p
}

func TestIngress(t *testing.T) {
	tests := []struct {
		name string
		ing  *networkingv1.Ingress
		want *Publication
	}{
		{
			name: "rule hosts",
			ing:  newIngress("shop", "front", rules("shop.example.com", "www.shop.example.com"), ingStatus(networkingv1.IngressLoadBalancerIngress{IP: "192.0.2.10"})),
			want: ingPub("shop", "front", Publication{
				Names:     []Name{host("shop.example.com", "example.com"), host("www.shop.example.com", "example.com")},
				Addresses: addrs("192.0.2.10"),
			}),
		},
		{
			name: "rule without host is skipped",
			ing:  newIngress("shop", "front", rules("", "shop.example.com")),
			want: ingPub("shop", "front", Publication{Names: []Name{host("shop.example.com", "example.com")}}),
		},
		{
			name: "no hosts",
			ing:  newIngress("shop", "front", rules(""), ingStatus(networkingv1.IngressLoadBalancerIngress{IP: "192.0.2.10"})),
			want: ingPub("shop", "front", Publication{Addresses: addrs("192.0.2.10")}),
		},
		{
			name: "TLS hosts deduplicated with rule hosts",
			ing:  newIngress("shop", "front", rules("shop.example.com"), tls("shop.example.com", "secure.example.com"), tls("SECURE.example.com.", "api.dev.example.org")),
			want: ingPub("shop", "front", Publication{
				Names: []Name{
					host("shop.example.com", "example.com"),
					host("secure.example.com", "example.com"),
					host("api.dev.example.org", "dev.example.org"),
				},
			}),
		},
		{
			name: "hostname annotations",
			ing: newIngress("shop", "front", rules("shop.example.com"), ingAnnotate(
				AnnotationHostname, "a.example.com",
				"external-dns.alpha.kubernetes.io/hostname", "b.example.com, shop.example.com",
				"external-dns.kubernetes.io/hostname", "c.example.com",
			)),
			want: ingPub("shop", "front", Publication{
				Names: []Name{
					host("shop.example.com", "example.com"),
					host("a.example.com", "example.com"),
					host("b.example.com", "example.com"),
					host("c.example.com", "example.com"),
				},
			}),
		},
		{
			name: "wildcard hosts",
			ing:  newIngress("shop", "front", rules("*.shop.example.com", "shop.example.com"), tls("*.example.org")),
			want: ingPub("shop", "front", Publication{
				Names: []Name{host("shop.example.com", "example.com")},
				Problems: []Problem{
					problem(ReasonInvalidHostname, "*.shop.example.com"),
					problem(ReasonInvalidHostname, "*.example.org"),
				},
			}),
		},
		{
			name: "hosts outside the zones and reserved",
			ing:  newIngress("shop", "front", rules("shop.example.net", "dns.example.com", "example.org")),
			want: ingPub("shop", "front", Publication{
				Names: []Name{host("example.org", "example.org")},
				Problems: []Problem{
					problem(ReasonInvalidHostname, "shop.example.net"),
					problem(ReasonInvalidHostname, "dns.example.com"),
				},
			}),
		},
		{
			name: "TTL annotation",
			ing:  newIngress("shop", "front", rules("shop.example.com"), ingAnnotate("external-dns.alpha.kubernetes.io/ttl", "10m")),
			want: ingPub("shop", "front", Publication{TTL: 600, Names: []Name{host("shop.example.com", "example.com")}}),
		},
		{
			name: "invalid TTL annotation",
			ing:  newIngress("shop", "front", rules("shop.example.com"), ingAnnotate(AnnotationTTL, "1d")),
			want: ingPub("shop", "front", Publication{
				Names:    []Name{host("shop.example.com", "example.com")},
				Problems: []Problem{problem(ReasonInvalidTTL, "1d")},
			}),
		},
		{
			name: "status addresses and hostnames",
			ing: newIngress("shop", "front", rules("shop.example.com"), ingStatus(
				networkingv1.IngressLoadBalancerIngress{IP: "2001:db8::2"},
				networkingv1.IngressLoadBalancerIngress{IP: "::ffff:198.51.100.1"},
				networkingv1.IngressLoadBalancerIngress{IP: "198.51.100.1"},
				networkingv1.IngressLoadBalancerIngress{IP: "2001:db8:0::1"},
				networkingv1.IngressLoadBalancerIngress{IP: "nope"},
				networkingv1.IngressLoadBalancerIngress{Hostname: "z.lb.example.net"},
				networkingv1.IngressLoadBalancerIngress{Hostname: "a.lb.example.net."},
			)),
			want: ingPub("shop", "front", Publication{
				Names:     []Name{host("shop.example.com", "example.com")},
				Addresses: addrs("198.51.100.1", "2001:db8::1", "2001:db8::2"),
				Targets:   []string{"a.lb.example.net", "z.lb.example.net"},
				Problems:  []Problem{problem(ReasonInvalidAddress, "nope")},
			}),
		},
	}
	b := NewBuilder(testConfig, Listers{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.Ingress(tt.ing)
			if diff := diffPub(tt.want, got); diff != "" {
				t.Errorf("Ingress(%s/%s) mismatch (-want +got):\n%s", tt.ing.Namespace, tt.ing.Name, diff)
			}
			checkProblemMessages(t, tt.want, got)
		})
	}
}

func TestPublicationEqual(t *testing.T) {
	b := NewBuilder(testConfig, Listers{})
	base := func() *Publication {
		return b.Service(newService("default", "web",
			annotate(AnnotationHostname, "shop.example.com,bad.example.net", AnnotationTTL, "60"),
			ips("192.0.2.10", "2001:db8::1"), hostnames("lb.example.net")))
	}
	tests := []struct {
		name   string
		change func(p *Publication) *Publication
		want   bool
	}{
		{name: "same object", change: func(p *Publication) *Publication { return p }, want: true},
		{name: "built again", change: func(*Publication) *Publication { return base() }, want: true},
		{name: "same instant in another location", change: func(p *Publication) *Publication {
			p.Created = p.Created.In(time.FixedZone("UTC+2", 2*3600))
			return p
		}, want: true},
		{name: "source", change: func(p *Publication) *Publication { p.Source = "ingress/default/web"; return p }},
		{name: "key", change: func(p *Publication) *Publication { p.Key.Namespace = "other"; return p }},
		{name: "created", change: func(p *Publication) *Publication { p.Created = p.Created.Add(time.Second); return p }},
		{name: "TTL", change: func(p *Publication) *Publication { p.TTL++; return p }},
		{name: "UID", change: func(p *Publication) *Publication { p.UID = "other"; return p }},
		{name: "name", change: func(p *Publication) *Publication { p.Names[0].Name = "x.example.org"; return p }},
		{name: "generated flag", change: func(p *Publication) *Publication { p.Names[2].Generated = true; return p }},
		{name: "fewer names", change: func(p *Publication) *Publication { p.Names = p.Names[:1]; return p }},
		{name: "address", change: func(p *Publication) *Publication { p.Addresses[0] = netip.MustParseAddr("192.0.2.11"); return p }},
		{name: "target", change: func(p *Publication) *Publication { p.Targets = nil; return p }},
		{name: "problem", change: func(p *Publication) *Publication { p.Problems[0].Message += "!"; return p }},
		{name: "shared", change: func(p *Publication) *Publication { p.Shared = true; return p }},
		{name: "unhealthy", change: func(p *Publication) *Publication { p.Unhealthy = true; return p }},
		{name: "cluster policy", change: func(p *Publication) *Publication { p.ClusterPolicy = arbitrate.Failover; return p }},
		{name: "cluster priority", change: func(p *Publication) *Publication { p.ClusterPriority = 10; return p }},
		{name: "nil", change: func(*Publication) *Publication { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			q := tt.change(base())
			if got := p.Equal(q); got != tt.want {
				t.Errorf("Equal() = %v, want %v", got, tt.want)
			}
			if got := q.Equal(p); got != tt.want {
				t.Errorf("Equal() reversed = %v, want %v", got, tt.want)
			}
		})
	}

	// Slices compare by content: nil and empty slices are equal.
	p := b.Service(newService("shop", "web"))
	q := b.Service(newService("shop", "web"))
	q.Addresses, q.Targets, q.Problems = []netip.Addr{}, []string{}, []Problem{}
	if !p.Equal(q) {
		t.Errorf("Equal() = false for nil and empty slices, want true")
	}
	// A name's texts are part of what it answers.
	p.Answers = map[string]Answer{"web.shop.example.org": {Texts: []string{"v=spf1 -all"}, TTL: 60}}
	q.Answers = map[string]Answer{"web.shop.example.org": {Texts: []string{"v=spf1 ~all"}, TTL: 60}}
	if p.Equal(q) {
		t.Errorf("Equal() = true for answers of other texts, want false")
	}
	var none *Publication
	if !none.Equal(nil) {
		t.Errorf("(*Publication)(nil).Equal(nil) = false, want true")
	}
}

// FuzzAnnotations feeds arbitrary hostname and TTL annotations to a Service.
func FuzzAnnotations(f *testing.F) {
	f.Add("web.example.org", "a.example.com, b.example.com", "60", "")
	f.Add("*.example.org,dns.example.org", "example.org.", "1m30s", "5")
	f.Add(" , ,,", "WEB.EXAMPLE.ORG.", "", "86401")
	f.Add("a..example.org", "x.example.net", "-1", "999999999999h")
	f.Add("\u212a8s.example.org", "ns.dns.dev.example.org", "0", "1e3")
	f.Fuzz(func(t *testing.T, hostname, extHostname, ttl, extTTL string) {
		ann := map[string]string{
			AnnotationHostname:                          hostname,
			"external-dns.alpha.kubernetes.io/hostname": extHostname,
			"external-dns.kubernetes.io/ttl":            extTTL,
		}
		if ttl != "" {
			ann[AnnotationTTL] = ttl
		}
		svc := newService("default", "web", func(s *corev1.Service) { s.Annotations = ann })
		p := NewBuilder(testConfig, Listers{}).Service(svc)
		if p == nil {
			t.Fatalf("Service() = nil for a LoadBalancer Service with annotations %q", ann)
		}
		if p.TTL < 1 || p.TTL > MaxTTL {
			t.Errorf("Service() TTL = %d with annotations %q, want 1 to %d", p.TTL, ann, MaxTTL)
		}
		seen := make(map[string]bool)
		for _, n := range p.Names {
			if got, err := dnsname.Parse(n.Name); err != nil || got != n.Name {
				t.Errorf("dnsname.Parse(%q) = %q, %v; want %q, <nil> (annotations %q)", n.Name, got, err, n.Name, ann)
			}
			if !slices.Contains(testZones, n.Zone) || !dnsname.IsWithin(n.Name, n.Zone) {
				t.Errorf("Name %+v is not within a served zone (annotations %q)", n, ann)
			}
			if placed, err := testZones.Place(n.Name); err != nil || placed != n.Placed {
				t.Errorf("Place(%q) = %+v, %v; want %+v, <nil>", n.Name, placed, err, n.Placed)
			}
			if seen[n.Name] {
				t.Errorf("Name %q appears twice (annotations %q)", n.Name, ann)
			}
			seen[n.Name] = true
			if n.Apex() {
				t.Errorf("Name %q is a zone's apex, which namespace default may not publish (annotations %q)", n.Name, ann)
			}
		}
		if len(p.Names) < 2 || p.Names[0] != gen("web.default.example.org", "example.org") || p.Names[1] != gen("web.example.org", "example.org") {
			t.Errorf("Service() Names = %+v, want the generated names first", p.Names)
		}
		for _, pr := range p.Problems {
			if pr.Reason != ReasonInvalidHostname && pr.Reason != ReasonInvalidTTL && pr.Reason != ReasonApexRefused {
				t.Errorf("Service() problem %+v, want only InvalidHostname, InvalidTTL or ApexRefused", pr)
			}
		}
	})
}

func TestServiceSharedAndClusterLabel(t *testing.T) {
	cfg := testConfig
	cfg.ClusterLabel = "east"
	b := NewBuilder(cfg, Listers{})
	tests := []struct {
		name string
		svc  *corev1.Service
		want *Publication
	}{
		{
			name: "generated names carry the cluster label",
			svc:  newService("default", "web"),
			want: svcPub("default", "web", Publication{Names: []Name{
				gen("web.default.east.example.org", "example.org"), gen("web.east.example.org", "example.org"),
			}}),
		},
		{
			name: "shared",
			svc:  newService("shop", "web", annotate(AnnotationShared, "true", AnnotationHostname, "www.example.org")),
			want: svcPub("shop", "web", Publication{Shared: true, Names: []Name{
				gen("web.shop.east.example.org", "example.org"), host("www.example.org", "example.org"),
			}}),
		},
		{
			name: "a value that is not a boolean shares nothing",
			svc:  newService("shop", "web", annotate(AnnotationShared, "yes please")),
			want: svcPub("shop", "web", Publication{
				Names:    []Name{gen("web.shop.east.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidAnnotation, AnnotationShared)},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.Service(tt.svc)
			if diff := diffPub(tt.want, got); diff != "" {
				t.Errorf("Service mismatch (-want +got):\n%s", diff)
			}
			checkProblemMessages(t, tt.want, got)
		})
	}
}

func TestServiceClusterPolicy(t *testing.T) {
	b := NewBuilder(testConfig, Listers{})
	tests := []struct {
		name        string
		annotations []string
		policy      arbitrate.Policy
		priority    int
		problem     string
	}{
		{name: "defaults", policy: arbitrate.Balanced, priority: arbitrate.DefaultPriority},
		{
			name:        "failover with a priority",
			annotations: []string{AnnotationClusterPolicy, "Failover", AnnotationClusterPriority, " 10 "},
			policy:      arbitrate.Failover, priority: 10,
		},
		{
			name:        "priority 0 is the most preferred",
			annotations: []string{AnnotationClusterPolicy, "failover", AnnotationClusterPriority, "0"},
			policy:      arbitrate.Failover, priority: 0,
		},
		{
			name:        "balanced",
			annotations: []string{AnnotationClusterPolicy, "balanced", AnnotationClusterPriority, "65535"},
			policy:      arbitrate.Balanced, priority: 65535,
		},
		{
			name:        "an unknown policy is balanced",
			annotations: []string{AnnotationClusterPolicy, "weighted", AnnotationClusterPriority, "20"},
			policy:      arbitrate.Balanced, priority: 20, problem: AnnotationClusterPolicy,
		},
		{
			name:        "a priority out of range is the default",
			annotations: []string{AnnotationClusterPolicy, "failover", AnnotationClusterPriority, "65536"},
			policy:      arbitrate.Failover, priority: arbitrate.DefaultPriority, problem: AnnotationClusterPriority,
		},
		{
			name:        "a negative priority is the default",
			annotations: []string{AnnotationClusterPriority, "-1"},
			policy:      arbitrate.Balanced, priority: arbitrate.DefaultPriority, problem: AnnotationClusterPriority,
		},
		{
			name:        "a priority that is no number is the default",
			annotations: []string{AnnotationClusterPriority, "first"},
			policy:      arbitrate.Balanced, priority: arbitrate.DefaultPriority, problem: AnnotationClusterPriority,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := b.Service(newService("shop", "web", annotate(append([]string{AnnotationShared, "true"}, tt.annotations...)...)))
			if p.ClusterPolicy != tt.policy || int(p.ClusterPriority) != tt.priority {
				t.Errorf("Service() cluster policy, priority = %q, %d; want %q, %d", p.ClusterPolicy, p.ClusterPriority, tt.policy, tt.priority)
			}
			var want []Problem
			if tt.problem != "" {
				want = []Problem{problem(ReasonInvalidAnnotation, tt.problem)}
			}
			if diff := cmp.Diff(want, p.Problems, cmpopts.IgnoreFields(Problem{}, "Message"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Problems mismatch (-want +got):\n%s", diff)
			}
			if len(p.Problems) == 1 && !strings.Contains(p.Problems[0].Message, tt.problem) {
				t.Errorf("Problems[0].Message = %q, want it to name %s", p.Problems[0].Message, tt.problem)
			}
			if !p.Shared {
				t.Errorf("Service() Shared = false; an invalid cluster annotation must not lose the sharing")
			}
		})
	}
}
