package controller

import (
	"context"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/source"
)

// informerSet holds the informers of one resource: none when skylb does not
// read it, one over every namespace, or one per watched namespace (--namespace),
// whose caches read as one through indexer.
type informerSet struct {
	list []cache.SharedIndexInformer
	// namespaces are those of the informers of list, one each; nil for a
	// single informer over every namespace.
	namespaces []string
}

// indexer returns the caches of the set as one: a set of none reads as empty.
func (s informerSet) indexer() cache.Indexer {
	switch {
	case len(s.list) == 0:
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	case s.namespaces == nil:
		return s.list[0].GetIndexer()
	}
	m := &multiIndexer{byNS: make(map[string]cache.Indexer, len(s.list))}
	for i, inf := range s.list {
		m.all = append(m.all, inf.GetIndexer())
		m.byNS[s.namespaces[i]] = inf.GetIndexer()
	}
	return m
}

// addEventHandler adds h to every informer of the set, and returns whether
// each has handed h every object of its initial list.
func (s informerSet) addEventHandler(h cache.ResourceEventHandler) (cache.InformerSynced, error) {
	synced := make([]cache.InformerSynced, 0, len(s.list))
	for _, inf := range s.list {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return nil, err
		}
		synced = append(synced, reg.HasSynced)
	}
	return allSynced(synced), nil
}

// addIndexers adds indexers to every informer of the set.
func (s informerSet) addIndexers(ix cache.Indexers) error {
	for _, inf := range s.list {
		if err := inf.AddIndexers(ix); err != nil {
			return err
		}
	}
	return nil
}

// run runs every informer of the set under wg until ctx ends, and returns
// whether all of them have synced.
func (s informerSet) run(ctx context.Context, wg *sync.WaitGroup) cache.InformerSynced {
	synced := make([]cache.InformerSynced, 0, len(s.list))
	for _, inf := range s.list {
		wg.Go(func() { inf.RunWithContext(ctx) })
		synced = append(synced, inf.HasSynced)
	}
	return allSynced(synced)
}

func allSynced(synced []cache.InformerSynced) cache.InformerSynced {
	return func() bool {
		for _, f := range synced {
			if !f() {
				return false
			}
		}
		return true
	}
}

// coreInformers are the informers of the resources besides the CRDs'
// kinds (see discovery); a resource the scope does not read has none.
type coreInformers struct {
	services, slices, nodes, ingresses informerSet
}

func (i coreInformers) all() []informerSet {
	return []informerSet{i.services, i.slices, i.nodes, i.ingresses}
}

// informerMaker makes the informers of a resource: one over every namespace,
// or one per watched namespace (--namespace). Their caches keep what
// transform leaves of each object.
type informerMaker struct {
	api       API
	transform cache.TransformFunc
}

// of returns the informers of resource r, whose objects are like obj, over
// namespaces, all of them when there are none.
func (m informerMaker) of(r schema.GroupVersionResource, obj runtime.Object, namespaces []string) informerSet {
	if len(namespaces) == 0 {
		return informerSet{list: []cache.SharedIndexInformer{m.one(r, obj, metav1.NamespaceAll)}}
	}
	set := informerSet{namespaces: namespaces}
	for _, ns := range namespaces {
		set.list = append(set.list, m.one(r, obj, ns))
	}
	return set
}

func (m informerMaker) one(r schema.GroupVersionResource, obj runtime.Object, namespace string) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformerWithOptions(m.api.ListWatch(r, namespace), obj, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if m.transform != nil {
		// Only fails on an informer already started.
		_ = inf.SetTransform(m.transform)
	}
	return inf
}

// multiIndexer reads the caches of the informers of several namespaces as
// one, for the listers. It only reads: the informers write their own caches,
// and a write through it panics on the nil Indexer it embeds.
type multiIndexer struct {
	cache.Indexer
	all  []cache.Indexer
	byNS map[string]cache.Indexer
}

// gather concatenates what f returns of every cache.
func gather[T any](m *multiIndexer, f func(cache.Indexer) ([]T, error)) ([]T, error) {
	var out []T
	for _, idx := range m.all {
		items, err := f(idx)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

func (m *multiIndexer) List() []any {
	out, _ := gather(m, func(idx cache.Indexer) ([]any, error) { return idx.List(), nil })
	return out
}

func (m *multiIndexer) ListKeys() []string {
	out, _ := gather(m, func(idx cache.Indexer) ([]string, error) { return idx.ListKeys(), nil })
	return out
}

func (m *multiIndexer) Get(obj any) (any, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return m.GetByKey(key)
}

func (m *multiIndexer) GetByKey(key string) (any, bool, error) {
	ns, _, _ := strings.Cut(key, "/")
	if idx := m.byNS[ns]; idx != nil {
		return idx.GetByKey(key)
	}
	return nil, false, nil
}

func (m *multiIndexer) Index(indexName string, obj any) ([]any, error) {
	if indexName == cache.NamespaceIndex {
		// What the listers ask for a namespace's objects.
		acc, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if idx := m.byNS[acc.GetNamespace()]; idx != nil {
			return idx.Index(indexName, obj)
		}
		return nil, nil
	}
	return gather(m, func(idx cache.Indexer) ([]any, error) { return idx.Index(indexName, obj) })
}

func (m *multiIndexer) IndexKeys(indexName, value string) ([]string, error) {
	return gather(m, func(idx cache.Indexer) ([]string, error) { return idx.IndexKeys(indexName, value) })
}

func (m *multiIndexer) ListIndexFuncValues(indexName string) []string {
	out, _ := gather(m, func(idx cache.Indexer) ([]string, error) { return idx.ListIndexFuncValues(indexName), nil })
	slices.Sort(out)
	return slices.Compact(out)
}

func (m *multiIndexer) ByIndex(indexName, value string) ([]any, error) {
	return gather(m, func(idx cache.Indexer) ([]any, error) { return idx.ByIndex(indexName, value) })
}

func (m *multiIndexer) GetIndexers() cache.Indexers { return m.all[0].GetIndexers() }

// serviceNamespaces returns the namespaces whose Services and EndpointSlices
// are watched: those of the scope and the ingress controller's Service's
// (ingressService, "namespace/name"), whose addresses Ingresses take; nil
// for every namespace.
func serviceNamespaces(sc scope.Scope, ingressService string) []string {
	if len(sc.Namespaces) == 0 {
		return nil
	}
	out := slices.Clone(sc.Namespaces)
	if ns, _, ok := strings.Cut(ingressService, "/"); ok && sc.Kind(source.KindIngress) {
		out = append(out, ns)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// runInformers runs the informers of the core resources until ctx ends or
// stop is called; stop returns once they have stopped.
func (c *Controller) runInformers(ctx context.Context) (stop func()) {
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	for _, s := range c.caches.informers.all() {
		s.run(ctx, &wg)
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
