package app

import (
	"context"
	"fmt"
	"io"
	"net/netip"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/source"
	"github.com/skylb/skylb/internal/zone"
)

// PrintDelegation writes what the parent zone needs: NS and glue records and
// conditional-forwarder settings. With a nameserver selector it reads the
// cluster once through kube (which may be nil when no cluster can be reached);
// when that fails it says so on warn and prints the static nameservers alone.
func PrintDelegation(ctx context.Context, out, warn io.Writer, src source.Config, zc *controller.ZoneConfig, kube kubernetes.Interface) error {
	var found []netip.Addr
	if zc.NameserverSelector != nil {
		var err error
		if kube == nil {
			err = fmt.Errorf("no cluster configuration")
		} else {
			found, err = findNameservers(ctx, kube, src, zc.NameserverSelector)
		}
		if err != nil {
			fmt.Fprintf(warn, "skylb: --nameserver-selector: cannot read the cluster (%v); printing the --nameserver flags only\n", err)
		}
	}
	return zone.PrintDelegation(out, src.Zones, zone.Assign(zc.Nameservers, found))
}

// findNameservers reads the selected Services, their EndpointSlices and their
// nodes once, and returns the nameserver addresses the controller would publish.
func findNameservers(ctx context.Context, kube kubernetes.Interface, src source.Config, sel labels.Selector) ([]netip.Addr, error) {
	index := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	svcIdx, sliceIdx, nodeIdx := index(), index(), index()
	svcs, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	nodes := map[string]bool{}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		_ = svcIdx.Add(svc)
		eps, err := kube.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx,
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
		if err != nil {
			return nil, err
		}
		for j := range eps.Items {
			_ = sliceIdx.Add(&eps.Items[j])
			for _, ep := range eps.Items[j].Endpoints {
				if ep.NodeName != nil {
					nodes[*ep.NodeName] = true
				}
			}
		}
	}
	for name := range nodes {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		_ = nodeIdx.Add(n)
	}
	b := source.NewBuilder(src, source.Listers{
		Services:       corelisters.NewServiceLister(svcIdx),
		EndpointSlices: discoverylisters.NewEndpointSliceLister(sliceIdx),
		Nodes:          corelisters.NewNodeLister(nodeIdx),
	})
	found, _ := b.NameserverAddresses(sel)
	return found, nil
}
