package main

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/skylb/skylb/internal/app"
)

// kubeClients builds the Kubernetes, Gateway API and metadata clients from a
// kubeconfig path, or in-cluster config, or $KUBECONFIG and ~/.kube/config,
// with wrap around their transport.
func kubeClients(path string, wrap transport.WrapperFunc) (app.Clients, error) {
	cfg, err := kubeConfig(path)
	if err != nil {
		return app.Clients{}, err
	}
	cfg.Wrap(wrap)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return app.Clients{}, err
	}
	gw, err := gatewayclient.NewForConfig(cfg)
	if err != nil {
		return app.Clients{}, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return app.Clients{}, err
	}
	return app.Clients{Kube: kube, Gateway: gw, Metadata: meta}, nil
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
