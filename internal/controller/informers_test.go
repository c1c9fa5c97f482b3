package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
)

// TestListersAcrossWatchedNamespaces: the listers over the informers of
// several namespaces read them as one cache, and find nothing of a namespace
// not watched.
func TestListersAcrossWatchedNamespaces(t *testing.T) {
	f := informerMaker{api: kubefake.New()}
	set := f.of(kubeclient.Services, &corev1.Service{}, []string{"blog", "shop"})
	svc := func(ns, name string, l map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	}
	for i, ns := range set.namespaces {
		for _, s := range []*corev1.Service{svc(ns, "web", map[string]string{"tier": "front"}), svc(ns, "db", nil)} {
			if err := set.list[i].GetIndexer().Add(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	l := corelisters.NewServiceLister(set.indexer())
	all, err := l.List(labels.Everything())
	if err != nil || len(all) != 4 {
		t.Errorf("List() = %d Services (%v), want 4", len(all), err)
	}
	front, _ := l.List(labels.SelectorFromSet(labels.Set{"tier": "front"}))
	if len(front) != 2 {
		t.Errorf("List(tier=front) = %d Services, want 2", len(front))
	}
	if got, err := l.Services("shop").Get("web"); err != nil || got.Namespace != "shop" {
		t.Errorf("Services(shop).Get(web) = %v, %v", got, err)
	}
	if _, err := l.Services("other").Get("web"); err == nil {
		t.Error("Services(other).Get(web) found a Service of a namespace not watched")
	}
	if in, err := l.Services("blog").List(labels.Everything()); err != nil || len(in) != 2 || in[0].Namespace != "blog" || in[1].Namespace != "blog" {
		t.Errorf("Services(blog).List() = %v, %v; want blog's two", in, err)
	}
	if in, err := l.Services("other").List(labels.Everything()); err != nil || len(in) != 0 {
		t.Errorf("Services(other).List() = %v, %v; want none", in, err)
	}
	keys := set.indexer().ListKeys()
	slices.Sort(keys)
	if want := []string{"blog/db", "blog/web", "shop/db", "shop/web"}; !slices.Equal(keys, want) {
		t.Errorf("ListKeys() = %q, want %q", keys, want)
	}
}

// TestListersOfAResourceNotRead: a resource skylb does not read lists as
// empty, with no informer.
func TestListersOfAResourceNotRead(t *testing.T) {
	var none informerSet
	l := corelisters.NewServiceLister(none.indexer())
	if all, err := l.List(labels.Everything()); err != nil || len(all) != 0 {
		t.Errorf("List() = %v, %v; want nothing", all, err)
	}
	synced, err := none.addEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil || !synced() {
		t.Errorf("addEventHandler() = synced %v, %v; want synced at once", synced(), err)
	}
}
