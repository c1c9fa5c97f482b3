package scope

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skylb/skylb/internal/source"
)

func selector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestParseSources(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr bool
	}{
		{name: "none is every kind", in: nil, want: nil},
		{name: "external-dns's names", in: []string{"service", "gateway-httproute"}, want: []string{source.KindHTTPRoute, source.KindService}},
		{name: "the Gateways themselves", in: []string{"gateway"}, want: []string{source.KindGateway}},
		{name: "DNSEndpoints, as external-dns names them", in: []string{"crd"}, want: []string{source.KindDNSEndpoint}},
		{name: "repeated", in: []string{"ingress", "ingress"}, want: []string{source.KindIngress}},
		{name: "unknown", in: []string{"services"}, wantErr: true},
		{name: "a kind is not a name", in: []string{"httproute"}, wantErr: true},
		{name: "external-dns's sources skylb lacks", in: []string{"gateway-tcproute"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSources(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSources(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && !slices.Equal(got, tt.want) {
				t.Errorf("ParseSources(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestObject(t *testing.T) {
	meta := func(ns string, l map[string]string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: l}
	}
	tests := []struct {
		name  string
		scope Scope
		kind  string
		meta  *metav1.ObjectMeta
		want  bool
	}{
		{name: "everything", kind: source.KindService, meta: meta("shop", nil), want: true},
		{name: "a watched namespace", scope: Scope{Namespaces: []string{"blog", "shop"}}, kind: source.KindService, meta: meta("shop", nil), want: true},
		{name: "another namespace", scope: Scope{Namespaces: []string{"blog"}}, kind: source.KindService, meta: meta("shop", nil), want: false},
		{name: "a kind asked for", scope: Scope{Kinds: []string{source.KindIngress, source.KindService}}, kind: source.KindService, meta: meta("shop", nil), want: true},
		{name: "a kind not asked for", scope: Scope{Kinds: []string{source.KindService}}, kind: source.KindIngress, meta: meta("shop", nil), want: false},
		{name: "labels match", scope: Scope{Selector: selector(t, "dns=public,tier!=internal")}, kind: source.KindHTTPRoute, meta: meta("shop", map[string]string{"dns": "public"}), want: true},
		{name: "labels do not match", scope: Scope{Selector: selector(t, "dns=public")}, kind: source.KindService, meta: meta("shop", map[string]string{"dns": "private"}), want: false},
		{name: "no labels", scope: Scope{Selector: selector(t, "dns")}, kind: source.KindService, meta: meta("shop", nil), want: false},
		{name: "every part must hold", scope: Scope{Namespaces: []string{"shop"}, Kinds: []string{source.KindService}, Selector: selector(t, "dns")},
			kind: source.KindService, meta: meta("blog", map[string]string{"dns": ""}), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.scope.Object(tt.kind, tt.meta); got != tt.want {
				t.Errorf("Object(%s, %s/%s %v) = %v, want %v", tt.kind, tt.meta.Namespace, tt.meta.Name, tt.meta.Labels, got, tt.want)
			}
		})
	}
}

func TestIngress(t *testing.T) {
	class := func(spec, annotation string) *networkingv1.Ingress {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
		if spec != "" {
			ing.Spec.IngressClassName = &spec
		}
		if annotation != "" {
			ing.Annotations = map[string]string{AnnotationIngressClass: annotation}
		}
		return ing
	}
	nginx := Scope{IngressClasses: []string{"nginx", "traefik"}}
	tests := []struct {
		name  string
		scope Scope
		ing   *networkingv1.Ingress
		want  bool
	}{
		{name: "no class filter", ing: class("", ""), want: true},
		{name: "spec.ingressClassName", scope: nginx, ing: class("traefik", ""), want: true},
		{name: "the legacy annotation", scope: nginx, ing: class("", "nginx"), want: true},
		{name: "another class", scope: nginx, ing: class("haproxy", ""), want: false},
		{name: "the spec wins over the annotation", scope: nginx, ing: class("haproxy", "nginx"), want: false},
		{name: "without a class", scope: nginx, ing: class("", ""), want: false},
		{name: "the class and the labels", scope: Scope{IngressClasses: []string{"nginx"}, Selector: selector(t, "dns")}, ing: class("nginx", ""), want: false},
		{name: "ingresses not published", scope: Scope{Kinds: []string{source.KindService}}, ing: class("", ""), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.scope.Ingress(tt.ing); got != tt.want {
				t.Errorf("Ingress(class %v, annotations %v) = %v, want %v", tt.ing.Spec.IngressClassName, tt.ing.Annotations, got, tt.want)
			}
		})
	}
}

func TestGatewayClass(t *testing.T) {
	if !(Scope{}).GatewayClass("any") {
		t.Error("GatewayClass(any) without --gateway-class = false, want true")
	}
	s := Scope{GatewayClasses: []string{"public"}}
	if !s.GatewayClass("public") || s.GatewayClass("internal") || s.GatewayClass("") {
		t.Errorf("GatewayClass with %q: public %v, internal %v, empty %v; want true, false, false",
			s.GatewayClasses, s.GatewayClass("public"), s.GatewayClass("internal"), s.GatewayClass(""))
	}
}

// TestOwns is the rule of deletion: what a scoped skylb may delete is only
// what it owns in its scope.
func TestOwns(t *testing.T) {
	scoped := Scope{Namespaces: []string{"shop"}, Kinds: []string{source.KindService, source.KindHTTPRoute},
		Selector: selector(t, "dns=public"), IngressClasses: []string{"nginx"}}
	tests := []struct {
		name  string
		scope Scope
		src   string
		want  bool
	}{
		{name: "everything owns everything", src: "ingress/blog/web", want: true},
		{name: "a kind and namespace in scope", scope: scoped, src: "service/shop/web", want: true},
		{name: "a route in scope", scope: scoped, src: "httproute/shop/web", want: true},
		{name: "another namespace", scope: scoped, src: "service/blog/web", want: false},
		{name: "another kind", scope: scoped, src: "ingress/shop/web", want: false},
		{name: "the Gateways are a kind of their own", scope: scoped, src: "gateway/shop/web", want: false},
		{name: "a nameserver record", scope: scoped, src: "nameserver/ns1", want: true},
		{name: "the apex guard", scope: scoped, src: "apex-guard", want: true},
		{name: "a record without a source", scope: scoped, src: "", want: true},
		{name: "an object's kind without a whole key, namespaces narrowed", scope: scoped, src: "service/shop", want: false},
		{name: "an object's kind without a whole key, every namespace", scope: Scope{Kinds: []string{source.KindService}}, src: "service/shop", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.scope.Owns(tt.src); got != tt.want {
				t.Errorf("Owns(%q) = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name  string
		scope Scope
		want  string
	}{
		{name: "everything", want: ""},
		{name: "an empty selector is everything", scope: Scope{Selector: labels.Everything()}, want: ""},
		{name: "every part, sorted", scope: Scope{
			Namespaces: []string{"shop", "blog", "shop"}, Kinds: []string{source.KindHTTPRoute, source.KindService},
			Selector: selector(t, "tier!=internal,dns=public"), IngressClasses: []string{"traefik", "nginx"}, GatewayClasses: []string{"public"},
		}, want: "namespace=blog,shop source=service,gateway-httproute label-selector=dns=public,tier!=internal ingress-class=nginx,traefik gateway-class=public"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.scope.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := tt.scope.All(); got != (tt.want == "") {
				t.Errorf("All() = %v, want %v", got, tt.want == "")
			}
		})
	}
}
