// Package kubefake is a kubeclient.Interface over client-go's fake clientset,
// for unit tests: objects are created and changed through the clientset, and
// its reactors see every request made through the fake.
package kubefake

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/kubeclient"
)

// Fake serves the built-in resources from its Clientset. It serves no
// custom resource.
type Fake struct {
	*fake.Clientset
}

var _ kubeclient.Interface = (*Fake)(nil)

// New returns a Fake holding objects.
func New(objects ...runtime.Object) *Fake {
	return &Fake{Clientset: fake.NewClientset(objects...)}
}

// For returns a Fake over cs.
func For(cs *fake.Clientset) *Fake { return &Fake{Clientset: cs} }

// kind returns the kind of obj, a list or an object of Scheme, without "List".
func kind(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := kubeclient.Scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	gvk := gvks[0]
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return gvk, nil
}

// invokeInto runs action through the clientset's reactors and copies the
// object they answer into obj, which is of its type.
func (f *Fake) invokeInto(action clienttesting.Action, obj runtime.Object) error {
	got, err := f.Invokes(action, obj.DeepCopyObject())
	if err != nil {
		return err
	}
	dv, sv := reflect.ValueOf(obj), reflect.ValueOf(got)
	if dv.Type() != sv.Type() {
		return fmt.Errorf("kubefake: got %T, want %T", got, obj)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}

// ListWatch implements kubeclient.Interface.
func (f *Fake) ListWatch(r schema.GroupVersionResource, namespace string) cache.ListerWatcher {
	// The fake clientset cannot stream the initial list, and says so.
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := kubeclient.Scheme.New(r.GroupVersion().WithKind(listKinds[r.Resource]))
			if err != nil {
				return nil, err
			}
			return list, f.List(ctx, r, namespace, opts, list)
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return f.InvokesWatch(clienttesting.NewWatchActionWithOptions(r, namespace, opts))
		},
	}, f.Clientset)
}

// listKinds are the list kinds of the resources the informers read.
var listKinds = map[string]string{
	"services": "ServiceList", "nodes": "NodeList", "endpointslices": "EndpointSliceList", "ingresses": "IngressList",
}

// List implements kubeclient.Interface.
func (f *Fake) List(_ context.Context, r schema.GroupVersionResource, namespace string, opts metav1.ListOptions, list runtime.Object) error {
	gvk, err := kind(list)
	if err != nil {
		return err
	}
	return f.invokeInto(clienttesting.NewListActionWithOptions(r, gvk, namespace, opts), list)
}

// Watch implements kubeclient.Interface. The fake clientset's watches
// filter by namespace only.
func (f *Fake) Watch(_ context.Context, r schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return f.InvokesWatch(clienttesting.NewWatchActionWithOptions(r, namespace, opts))
}

// Get implements kubeclient.Interface.
func (f *Fake) Get(_ context.Context, r schema.GroupVersionResource, namespace, name string, obj runtime.Object) error {
	return f.invokeInto(clienttesting.NewGetAction(r, namespace, name), obj)
}

// Create implements kubeclient.Interface.
func (f *Fake) Create(_ context.Context, r schema.GroupVersionResource, namespace string, obj runtime.Object) error {
	return f.invokeInto(clienttesting.NewCreateAction(r, namespace, obj), obj)
}

// Update implements kubeclient.Interface.
func (f *Fake) Update(_ context.Context, r schema.GroupVersionResource, namespace, _ string, obj runtime.Object) error {
	return f.invokeInto(clienttesting.NewUpdateAction(r, namespace, obj), obj)
}

// Patch implements kubeclient.Interface.
func (f *Fake) Patch(_ context.Context, r schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte, subresource ...string) error {
	_, err := f.Invokes(clienttesting.NewPatchSubresourceAction(r, namespace, name, pt, data, subresource...), nil)
	return err
}

// ServedResources implements kubeclient.Interface: neither the Gateway API
// nor external-dns's DNSEndpoint is installed; discovery of any other group
// version is an error.
func (f *Fake) ServedResources(_ context.Context, gv schema.GroupVersion) (map[string]bool, error) {
	if gv.Group == kubeclient.Gateways.Group || gv.Group == kubeclient.DNSEndpoints.Group {
		return map[string]bool{}, nil
	}
	return nil, fmt.Errorf("kubefake: discovery of %s not implemented", gv)
}

// EventSink implements kubeclient.Interface.
func (f *Fake) EventSink() record.EventSink {
	return &typedcorev1.EventSinkImpl{Interface: f.CoreV1().Events("")}
}
