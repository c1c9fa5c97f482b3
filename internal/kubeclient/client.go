package kubeclient

import (
	"context"
	"fmt"
	"net/http"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skylb/skylb/internal/externaldns"
)

// Scheme holds the API groups skylb reads and writes, and only those.
// client-go's typed clientset, informer factory and leader election register
// every group of k8s.io/api in one scheme, which links them all into the
// binary and builds their type information at start; skylb's clients decode
// with this one.
var Scheme = runtime.NewScheme()

// Codecs encode and decode the objects of Scheme.
var Codecs = serializer.NewCodecFactory(Scheme)

func init() {
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(discoveryv1.AddToScheme(Scheme))
	utilruntime.Must(networkingv1.AddToScheme(Scheme))
	utilruntime.Must(coordinationv1.AddToScheme(Scheme))
	utilruntime.Must(gatewayv1.Install(Scheme))
	utilruntime.Must(externaldns.AddToScheme(Scheme))
}

// The resources skylb reads and writes.
var (
	Services       = corev1.SchemeGroupVersion.WithResource("services")
	Nodes          = corev1.SchemeGroupVersion.WithResource("nodes")
	ConfigMaps     = corev1.SchemeGroupVersion.WithResource("configmaps")
	Events         = corev1.SchemeGroupVersion.WithResource("events")
	EndpointSlices = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	Ingresses      = networkingv1.SchemeGroupVersion.WithResource("ingresses")
	Leases         = coordinationv1.SchemeGroupVersion.WithResource("leases")
	Gateways       = gatewayv1.SchemeGroupVersion.WithResource("gateways")
	HTTPRoutes     = gatewayv1.SchemeGroupVersion.WithResource("httproutes")
	GRPCRoutes     = gatewayv1.SchemeGroupVersion.WithResource("grpcroutes")
	TLSRoutes      = gatewayv1.SchemeGroupVersion.WithResource("tlsroutes")
	DNSEndpoints   = externaldns.GroupVersion.WithResource("dnsendpoints")
)

// groupVersions are those of Scheme that the Client has a REST client for.
var groupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	discoveryv1.SchemeGroupVersion,
	networkingv1.SchemeGroupVersion,
	coordinationv1.SchemeGroupVersion,
	gatewayv1.SchemeGroupVersion,
	externaldns.GroupVersion,
}

// Interface is what skylb asks of the Kubernetes API: Client, and in unit
// tests a fake over client-go's.
type Interface interface {
	ListWatch(r schema.GroupVersionResource, namespace string) cache.ListerWatcher
	List(ctx context.Context, r schema.GroupVersionResource, namespace string, opts metav1.ListOptions, list runtime.Object) error
	Get(ctx context.Context, r schema.GroupVersionResource, namespace, name string, obj runtime.Object) error
	Watch(ctx context.Context, r schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, r schema.GroupVersionResource, namespace string, obj runtime.Object) error
	Update(ctx context.Context, r schema.GroupVersionResource, namespace, name string, obj runtime.Object) error
	Patch(ctx context.Context, r schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte, subresource ...string) error
	ServedResources(ctx context.Context, gv schema.GroupVersion) (map[string]bool, error)
	EventSink() record.EventSink
}

// Client reads and writes the resources of Scheme: one REST client per group
// version, sharing one HTTP client. The built-in groups speak protobuf, as
// client-go's typed clients do; the Gateway API, custom resources, JSON.
// Events go through a REST client of their own, with a rate limit of their
// own, so that a burst of Events never delays a status write.
type Client struct {
	rest   map[schema.GroupVersion]rest.Interface
	events rest.Interface
}

// Rate is a client-side limit on requests: QPS on average, up to Burst at
// once. Zero is client-go's default, 5 and 10.
type Rate struct {
	QPS   float32
	Burst int
}

// NewClient returns a Client for cfg. Each group version's requests are
// limited to cfg.QPS and cfg.Burst, Events' to events.
func NewClient(cfg *rest.Config, events Rate) (*Client, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{rest: make(map[schema.GroupVersion]rest.Interface, len(groupVersions))}
	for _, gv := range groupVersions {
		if c.rest[gv], err = restClient(cfg, gv, httpClient); err != nil {
			return nil, err
		}
	}
	ec := rest.CopyConfig(cfg)
	ec.QPS, ec.Burst, ec.RateLimiter = events.QPS, events.Burst, nil
	if c.events, err = restClient(ec, Events.GroupVersion(), httpClient); err != nil {
		return nil, err
	}
	return c, nil
}

// restClient returns the REST client of group version gv, on httpClient.
func restClient(cfg *rest.Config, gv schema.GroupVersion, httpClient *http.Client) (rest.Interface, error) {
	rc := rest.CopyConfig(cfg)
	rc.GroupVersion = &gv
	rc.APIPath = "/apis"
	if gv.Group == "" {
		rc.APIPath = "/api"
	}
	rc.NegotiatedSerializer = Codecs.WithoutConversion()
	// Custom resources have no protobuf encoding.
	if gv.Group != gatewayv1.GroupName && gv.Group != externaldns.GroupVersion.Group && rc.ContentType == "" {
		rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		rc.ContentType = "application/vnd.kubernetes.protobuf"
	}
	if rc.UserAgent == "" {
		rc.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientForConfigAndClient(rc, httpClient)
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", gv, err)
	}
	return client, nil
}

func (c *Client) client(r schema.GroupVersionResource) rest.Interface {
	if r == Events {
		return c.events
	}
	rc, ok := c.rest[r.GroupVersion()]
	if !ok {
		panic("kubeclient: no client of " + r.GroupVersion().String())
	}
	return rc
}

// ListWatch lists and watches resource r in namespace, in every namespace
// when it is "". Its informers stream their initial list (watch-list) where
// the API server can.
func (c *Client) ListWatch(r schema.GroupVersionResource, namespace string) cache.ListerWatcher {
	return cache.NewListWatchFromClient(c.client(r), r.Resource, namespace, fields.Everything())
}

// List lists resource r in namespace into list, e.g. a *corev1.ServiceList.
func (c *Client) List(ctx context.Context, r schema.GroupVersionResource, namespace string, opts metav1.ListOptions, list runtime.Object) error {
	return c.client(r).Get().NamespaceIfScoped(namespace, namespace != "").Resource(r.Resource).
		VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(list)
}

// Get reads the object namespace/name of resource r into obj.
func (c *Client) Get(ctx context.Context, r schema.GroupVersionResource, namespace, name string, obj runtime.Object) error {
	return c.client(r).Get().NamespaceIfScoped(namespace, namespace != "").Resource(r.Resource).Name(name).
		Do(ctx).Into(obj)
}

// Watch watches resource r in namespace with opts, e.g. one object by a
// metadata.name field selector, which RBAC authorizes against the object's
// name.
func (c *Client) Watch(ctx context.Context, r schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.client(r).Get().NamespaceIfScoped(namespace, namespace != "").Resource(r.Resource).
		VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
}

// Create creates obj, of resource r in namespace, and reads what the server
// stored back into it.
func (c *Client) Create(ctx context.Context, r schema.GroupVersionResource, namespace string, obj runtime.Object) error {
	return c.client(r).Post().NamespaceIfScoped(namespace, namespace != "").Resource(r.Resource).
		Body(obj).Do(ctx).Into(obj)
}

// Update replaces the object namespace/name of resource r with obj, on the
// condition of obj's resourceVersion, and reads what the server stored back
// into it.
func (c *Client) Update(ctx context.Context, r schema.GroupVersionResource, namespace, name string, obj runtime.Object) error {
	return c.client(r).Put().NamespaceIfScoped(namespace, namespace != "").Resource(r.Resource).Name(name).
		Body(obj).Do(ctx).Into(obj)
}

// Patch patches the object namespace/name of resource r, or its subresource
// when one is given, and discards the answer.
func (c *Client) Patch(ctx context.Context, r schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte, subresource ...string) error {
	return c.client(r).Patch(pt).NamespaceIfScoped(namespace, namespace != "").Resource(r.Resource).Name(name).
		SubResource(subresource...).Body(data).Do(ctx).Error()
}

// ServedResources returns the resources the API server serves in group
// version gv, none when it does not serve gv.
func (c *Client) ServedResources(ctx context.Context, gv schema.GroupVersion) (map[string]bool, error) {
	rc, ok := c.rest[gv]
	if !ok {
		rc = c.rest[corev1.SchemeGroupVersion]
	}
	var list metav1.APIResourceList
	err := rc.Get().AbsPath("/apis", gv.Group, gv.Version).Do(ctx).Into(&list)
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", gv, err)
	}
	out := make(map[string]bool, len(list.APIResources))
	for _, r := range list.APIResources {
		out[r.Name] = true
	}
	return out, nil
}

// EventSink writes the events of a record.EventBroadcaster through c.
func (c *Client) EventSink() record.EventSink { return EventSink{c: c} }

// EventSink implements client-go's record.EventSink on a Client.
type EventSink struct{ c *Client }

// Create creates event.
func (s EventSink) Create(event *corev1.Event) (*corev1.Event, error) {
	out := event.DeepCopy()
	return out, s.c.Create(context.Background(), Events, event.Namespace, out)
}

// Update replaces event.
func (s EventSink) Update(event *corev1.Event) (*corev1.Event, error) {
	out := event.DeepCopy()
	return out, s.c.Update(context.Background(), Events, event.Namespace, event.Name, out)
}

// Patch patches event with a strategic merge patch, as client-go's sink does.
func (s EventSink) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.c.client(Events).Patch(types.StrategicMergePatchType).Namespace(event.Namespace).Resource(Events.Resource).
		Name(event.Name).Body(data).Do(context.Background()).Into(out)
	return out, err
}
