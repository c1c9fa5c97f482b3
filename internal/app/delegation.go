package app

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/source"
	"github.com/skylb/skylb/internal/zone"
)

// PrintDelegation writes what the parent zone needs: NS and glue records and
// conditional-forwarder settings. With a nameserver selector it reads the
// cluster once through kube (which may be nil when no cluster can be reached);
// when that fails it says so on warn and prints the static nameservers alone.
// Without any nameserver, and with forward (NAMESPACE/NAME of the DNS
// server's Service, the default install's NodePort), it prints the
// forwarders to that Service's node port on the usable nodes instead.
func PrintDelegation(ctx context.Context, out, warn io.Writer, src source.Config, zc *controller.ZoneConfig, kube kubeclient.Interface, forward string) error {
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
	ns := zone.Assign(zc.Nameservers, found)
	if len(ns) == 0 && kube != nil && forward != "" {
		addrs, port, err := nodePortTargets(ctx, kube, src, forward)
		if err != nil {
			return fmt.Errorf("%w; and the Service %s: %w", zone.ErrNoNameservers, forward, err)
		}
		return zone.PrintForwarders(out, src.Zones, addrs, port)
	}
	return zone.PrintDelegation(out, src.Zones, ns)
}

// nodePortTargets returns the addresses of the usable nodes and the node
// port of the DNS port (53, UDP) of the Service forward, NAMESPACE/NAME.
func nodePortTargets(ctx context.Context, kube kubeclient.Interface, src source.Config, forward string) ([]netip.Addr, int, error) {
	ns, name, _ := strings.Cut(forward, "/")
	var svc corev1.Service
	if err := kube.Get(ctx, kubeclient.Services, ns, name, &svc); err != nil {
		return nil, 0, err
	}
	port := 0
	for _, p := range svc.Spec.Ports {
		if p.Port == 53 && p.Protocol == corev1.ProtocolUDP {
			port = int(p.NodePort)
		}
	}
	if port == 0 {
		return nil, 0, fmt.Errorf("no node port of its UDP port 53")
	}
	var nodes corev1.NodeList
	if err := kube.List(ctx, kubeclient.Nodes, "", metav1.ListOptions{}, &nodes); err != nil {
		return nil, 0, err
	}
	var addrs []netip.Addr
	for i := range nodes.Items {
		if n := &nodes.Items[i]; source.NodeUsable(n) {
			for _, a := range source.NodeAddresses(n, src.NodeAddressTypes) {
				if src.Filter.Permits(a) {
					addrs = append(addrs, a)
				}
			}
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs), port, nil
}

// findNameservers reads the selected Services, their EndpointSlices and their
// nodes once, and returns the nameserver addresses the controller would publish.
func findNameservers(ctx context.Context, kube kubeclient.Interface, src source.Config, sel labels.Selector) ([]netip.Addr, error) {
	index := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	svcIdx, sliceIdx, nodeIdx := index(), index(), index()
	var svcs corev1.ServiceList
	if err := kube.List(ctx, kubeclient.Services, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: sel.String()}, &svcs); err != nil {
		return nil, err
	}
	nodes := map[string]bool{}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		_ = svcIdx.Add(svc)
		var eps discoveryv1.EndpointSliceList
		if err := kube.List(ctx, kubeclient.EndpointSlices, svc.Namespace,
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name}, &eps); err != nil {
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
		n := &corev1.Node{}
		if err := kube.Get(ctx, kubeclient.Nodes, "", name, n); err != nil {
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
