package stack

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// InstallCRDs creates the CustomResourceDefinitions of a YAML file (path
// relative to the repository's root, such as manifests/dnsendpoint/crd.yaml),
// those there already left as they are, and waits until the API server
// serves the resources named in group version gv.
func (s *Stack) InstallCRDs(ctx context.Context, path string, gv schema.GroupVersion, resources ...string) error {
	crds, err := readCRDs(s.Root + "/" + path)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(s.RestConfig)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if _, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("stack: create CRD %s: %w", crd.GetName(), err)
		}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(s.RestConfig)
	if err != nil {
		return err
	}
	for {
		list, err := disc.ServerResourcesForGroupVersion(gv.String())
		if err == nil && servesAll(list.APIResources, resources) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: %s not served: %w", gv, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
