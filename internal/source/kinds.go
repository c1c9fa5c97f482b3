package source

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skylb/skylb/internal/externaldns"
)

// Kinds of object that publish names, as their keys (skydns.ObjectKey) and
// the sources of their records name them.
const (
	KindService   = "service"
	KindIngress   = "ingress"
	KindGateway   = "gateway"
	KindHTTPRoute = "httproute"
	KindGRPCRoute = "grpcroute"
	KindTLSRoute  = "tlsroute"
	// KindDNSEndpoint is external-dns's DNSEndpoint (see DNSEndpoint).
	KindDNSEndpoint = "dnsendpoint"
)

// Kinds are the Kubernetes kinds of the kinds of object that publish names,
// by their kind in a key: what an Event's reference names.
var Kinds = map[string]schema.GroupVersionKind{
	KindService:     corev1.SchemeGroupVersion.WithKind("Service"),
	KindIngress:     networkingv1.SchemeGroupVersion.WithKind("Ingress"),
	KindGateway:     gatewayv1.SchemeGroupVersion.WithKind("Gateway"),
	KindHTTPRoute:   gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute"),
	KindGRPCRoute:   gatewayv1.SchemeGroupVersion.WithKind("GRPCRoute"),
	KindTLSRoute:    gatewayv1.SchemeGroupVersion.WithKind("TLSRoute"),
	KindDNSEndpoint: externaldns.GroupVersion.WithKind("DNSEndpoint"),
}
