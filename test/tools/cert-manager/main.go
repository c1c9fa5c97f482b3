// Command cert-manager-controller runs cert-manager's controllers, those of
// github.com/cert-manager/cert-manager at the version go.mod pins, for the
// image test/images builds (quay.io/jetstack/cert-manager-controller).
//
// Upstream's binary is the main package of its cmd/controller module, a
// module the Go module proxy does not serve; this main assembles the same
// controllers from the main module's library: each controller package
// registers its constructor in pkg/controller's registry when imported, and
// the run below builds every registered one from a ContextFactory, starts
// the shared informers and runs them, as upstream's cmd/controller/app does.
//
// Only the controllers that CA and self-signed issuers need are imported:
// Issuers and ClusterIssuers, the Certificate controllers (trigger, key
// manager, request manager, issuing, readiness, revision manager), the
// CertificateRequest signers of the ca and selfSigned issuers, and the
// approver, which approves every request as upstream's default does. ACME,
// Vault, Venafi, the ingress and gateway shims and CertificateSigningRequests
// are left out.
//
// Neither the webhook nor the cainjector is needed: the CRDs of deploy/crds
// serve one version (no conversion webhook) and validate with their OpenAPI
// schemas; the webhook's extra checks (e.g. a duration of at least an hour)
// only guard against mistakes, and the requester identity it records on
// CertificateRequests is read only by policy approvers, not by the approver
// run here; the cainjector only fills caBundle fields of webhook and API
// service configurations, which nothing here has.
//
// Leader election is off: the Deployment runs one replica with the Recreate
// strategy, so two controllers never run at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// workers is the number of workers of each controller (upstream's default).
const workers = 5

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default: the in-cluster configuration)")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets that ClusterIssuers refer to")
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	logf.InitLogs()
	defer logf.FlushLogs()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, klog.Background(), "cert-manager", "controller")
	if err := run(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20, // upstream's defaults
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: *clusterResourceNamespace},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	}); err != nil {
		logf.FromContext(ctx).Error(err, "controller stopped")
		logf.FlushLogs()
		os.Exit(1)
	}
}

// run builds every registered controller, starts the shared informers and
// runs the controllers until ctx is done or one of them fails.
func run(ctx context.Context, opts controllerpkg.ContextOptions) error {
	factory, err := controllerpkg.NewContextFactory(ctx, opts)
	if err != nil {
		return fmt.Errorf("build controller context: %w", err)
	}
	known := controllerpkg.Known()
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	sort.Strings(names)
	controllers := make(map[string]controllerpkg.Interface, len(names))
	for _, name := range names {
		c, err := known[name](factory)
		if err != nil {
			return fmt.Errorf("construct controller %s: %w", name, err)
		}
		controllers[name] = c
	}
	// Every controller registered its informers while constructed; the
	// factories are shared, so one Build gives them all.
	shared, err := factory.Build()
	if err != nil {
		return fmt.Errorf("build shared context: %w", err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			logf.FromContext(ctx).Info("starting controller", "controller", name)
			if err := controllers[name].Run(workers, ctx); err != nil {
				cancel(fmt.Errorf("controller %s: %w", name, err))
			}
		}()
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	wg.Wait()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
