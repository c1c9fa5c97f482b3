package cli

import (
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/kubeclient"
)

// kubeClients builds the Kubernetes and metadata clients from a
// kubeconfig path, or in-cluster config, or $KUBECONFIG and ~/.kube/config,
// with wrap around their transport and the rate limits of o.
func kubeClients(o *options, wrap transport.WrapperFunc) (app.Clients, error) {
	cfg, err := kubeConfig(o.kubeconfig)
	if err != nil {
		return app.Clients{}, err
	}
	cfg.Wrap(wrap)
	cfg.QPS, cfg.Burst = o.kubeAPI.QPS, o.kubeAPI.Burst
	kube, err := kubeclient.NewClient(cfg, o.events)
	if err != nil {
		return app.Clients{}, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return app.Clients{}, err
	}
	return app.Clients{Kube: kube, Metadata: meta}, nil
}

// kubeConfig returns the client configuration kubeClient uses.
func kubeConfig(path string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case path != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	default:
		cfg, err = rest.InClusterConfig()
		if err != nil {
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
		}
	}
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "skylb/" + currentVersion().Version
	return cfg, nil
}
