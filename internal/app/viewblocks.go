package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skylb/skylb/internal/corefile"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/source"
)

// ViewBlocks has skylb keep the CoreDNS server blocks of its views in a
// ConfigMap that CoreDNS imports (coredns/README.md, "Views"), so that a view
// is declared once, by skylb's flags.
type ViewBlocks struct {
	// Namespace and Name are the ConfigMap's; it is shipped with CoreDNS,
	// and skylb only updates it.
	Namespace, Name string
	// Networks are the client networks of each view, by view name. A view
	// of a topology zone without any answers the networks of the zone's
	// nodes (corefile.ZoneNetworks).
	Networks map[string][]netip.Prefix
}

// ViewBlocksKey is the ConfigMap's key that holds the blocks: a file
// CoreDNS's "import *.view" takes.
const ViewBlocksKey = "skylb.view"

// viewBlocksCheck is how often the ConfigMap is read again, besides after a
// change of the nodes: to put back what someone else changed.
const viewBlocksCheck = time.Minute

// viewBlocksRetry is how soon a write that failed is tried again.
const viewBlocksRetry = 5 * time.Second

// blockKeeper writes the views' blocks into the ConfigMap of ViewBlocks.
type blockKeeper struct {
	cfg    ViewBlocks
	prefix string
	zones  []string // the forward zones, which the views' blocks serve
	// coredns is CoreDNS's Service, NAMESPACE/NAME, when --coredns-address
	// names one: warnHiddenClients reads it.
	coredns string
	views   []source.View
	kube    kubeclient.Interface
	nodes   func() []*corev1.Node
	changed <-chan struct{} // signalled when the nodes change: a zone's networks may have
	log     logrus.FieldLogger
	written string // the blocks last written or found, to log a change once
	failed  string // the last failure logged, so that it is logged once
}

// newBlockKeeper returns the keeper of cfg.ViewBlocks, which must be set,
// reading the nodes from nodes and told of their changes by changed.
func newBlockKeeper(cfg Config, kube kubeclient.Interface, nodes func() []*corev1.Node, changed <-chan struct{}) *blockKeeper {
	return &blockKeeper{
		cfg: *cfg.ViewBlocks, prefix: cfg.Publish.Prefix, zones: cfg.Controller.Source.Zones, views: cfg.Controller.Source.Views, kube: kube,
		coredns: serviceOf(cfg.CoreDNSAddress), nodes: nodes, changed: changed,
		log: cfg.Log.WithField("component", "view-blocks"),
	}
}

// render returns the blocks the views have now; nothing without views, so
// that a ConfigMap never given a view keeps no file of skylb's (and CoreDNS is
// not reloaded for one).
func (k *blockKeeper) render() string {
	if len(k.views) == 0 {
		return ""
	}
	views := make([]corefile.View, len(k.views))
	for i, v := range k.views {
		views[i] = corefile.View{Name: v.Name}
		if n, ok := k.cfg.Networks[v.Name]; ok {
			views[i].Networks = n
		} else if v.Zone != "" {
			views[i].Networks, views[i].Zone = corefile.ZoneNetworks(k.nodes(), v.Zone), v.Zone
		}
	}
	return corefile.Blocks(k.prefix, k.zones, views)
}

// run keeps the ConfigMap's blocks current until ctx ends: at once, after
// each change of the nodes, and every viewBlocksCheck. The caller runs it
// once the caches have synced, and only where skylb writes (the leader).
func (k *blockKeeper) run(ctx context.Context) {
	t := time.NewTicker(viewBlocksCheck)
	defer t.Stop()
	k.warnHiddenClients(ctx)
	check := true
	for {
		var retry <-chan time.Time
		switch err := k.sync(ctx, check); {
		case err == nil:
			k.failed = ""
		case ctx.Err() != nil:
			return
		default:
			// A conflict with another writer, or the API server away:
			// soon again, not a minute later.
			retry = time.After(viewBlocksRetry)
			if err.Error() != k.failed {
				k.failed = err.Error()
				k.log.WithError(err).Warnf("the views' CoreDNS blocks could not be written to ConfigMap %s/%s", k.cfg.Namespace, k.cfg.Name)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-k.changed:
			// Nodes change often (their status): only a change of the
			// blocks costs a request.
			check = false
		case <-t.C:
			check = true
		case <-retry:
			check = true
		}
	}
}

// sync writes the blocks into the ConfigMap unless it holds them already,
// or, without views, removes skylb's file if the views were taken away;
// unless check, blocks the same as those last written or found are taken to
// be there still, and the ConfigMap is not read.
func (k *blockKeeper) sync(ctx context.Context, check bool) error {
	want := k.render()
	if !check && want == k.written {
		return nil
	}
	var cm corev1.ConfigMap
	if err := k.kube.Get(ctx, kubeclient.ConfigMaps, k.cfg.Namespace, k.cfg.Name, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			err = errNoViewConfigMap
		}
		return err
	}
	if cm.Data[ViewBlocksKey] == want {
		k.written = want
		return nil
	}
	if want == "" {
		delete(cm.Data, ViewBlocksKey)
	} else {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[ViewBlocksKey] = want
	}
	if err := k.kube.Update(ctx, kubeclient.ConfigMaps, k.cfg.Namespace, k.cfg.Name, &cm); err != nil {
		return err
	}
	if want != k.written {
		k.log.Infof("wrote the views' CoreDNS blocks to ConfigMap %s/%s, key %s", k.cfg.Namespace, k.cfg.Name, ViewBlocksKey)
	}
	k.written = want
	return nil
}

var errNoViewConfigMap = errors.New("no such ConfigMap: it is shipped with CoreDNS (coredns/deploy/views.yaml)")

// serviceOf returns NAMESPACE/NAME of the Service a DNS address names as
// NAME.NAMESPACE.svc[.DOMAIN]:PORT, or "".
func serviceOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(labels) < 3 || labels[2] != "svc" {
		return ""
	}
	return labels[1] + "/" + labels[0]
}

// warnHiddenClients warns once when views answer clients by their networks
// and CoreDNS's Service hands CoreDNS a node's address in place of the
// client's (a NodePort or LoadBalancer Service with externalTrafficPolicy
// Cluster): outside clients could then be answered from a view of the nodes'
// networks. A Service that cannot be read says nothing: CoreDNS may run on
// the host network (deploy/hostnetwork), where it sees the clients.
func (k *blockKeeper) warnHiddenClients(ctx context.Context) {
	if k.coredns == "" || !strings.Contains(k.render(), "\tview ") {
		return
	}
	ns, name, _ := strings.Cut(k.coredns, "/")
	var svc corev1.Service
	if err := k.kube.Get(ctx, kubeclient.Services, ns, name, &svc); err != nil {
		k.log.WithError(err).Debugf("CoreDNS's Service %s: not read", k.coredns)
		return
	}
	if msg := hiddenClients(&svc); msg != "" {
		k.log.Warnf("the views are chosen by the client's address, and CoreDNS's Service %s %s: clients outside may be answered from a view of the nodes' networks; give it externalTrafficPolicy: Local, or serve with the component deploy/hostnetwork (coredns/README.md, Views)", k.coredns, msg)
	}
}

// hiddenClients says how svc hides its clients' addresses from its pods, or
// returns "" when it does not.
func hiddenClients(svc *corev1.Service) string {
	switch {
	case svc.Spec.Type != corev1.ServiceTypeNodePort && svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
		return ""
	case svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal:
		return ""
	}
	return fmt.Sprintf("(%s, externalTrafficPolicy: Cluster) hands CoreDNS a node's address in place of the client's", svc.Spec.Type)
}
