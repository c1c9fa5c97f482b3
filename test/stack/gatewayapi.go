package stack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// gatewayAPIModule is the Go module whose standard-channel CRDs are installed;
// its version is the one go.mod requires.
const gatewayAPIModule = "sigs.k8s.io/gateway-api"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// GatewayAPICRDs returns the paths of the standard-channel CRDs of the
// Gateway API module that go.mod requires, from the module cache.
func GatewayAPICRDs(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, GoTool(), "list", "-m", "-f", "{{.Dir}}", gatewayAPIModule)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		// The module is in go.mod, so only its download can be missing.
		dl := exec.CommandContext(ctx, GoTool(), "mod", "download", gatewayAPIModule)
		dl.Dir, dl.Env = root, cmd.Env
		if derr := dl.Run(); derr != nil {
			return nil, fmt.Errorf("stack: locate %s: %w", gatewayAPIModule, err)
		}
		if out, err = cmd.Output(); err != nil {
			return nil, fmt.Errorf("stack: locate %s: %w", gatewayAPIModule, err)
		}
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	files, err := filepath.Glob(filepath.Join(dir, "gateway.networking.k8s.io_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("stack: no CRDs in %s", dir)
	}
	return files, nil
}

// InstallGatewayAPI creates the Gateway API's standard-channel CRDs, from the
// gateway-api module's own YAML, and waits until the API server serves
// gateways, httproutes, grpcroutes and tlsroutes at v1. Documents that are not
// CRDs (the module's admission policies) are left out.
func (s *Stack) InstallGatewayAPI(ctx context.Context) error {
	t := time.Now()
	n, err := installGatewayAPI(ctx, s.Root, s.RestConfig)
	if err != nil {
		return err
	}
	s.logf("Gateway API: %d standard-channel CRDs served in %.1fs", n, time.Since(t).Seconds())
	return nil
}

// installGatewayAPI installs the CRDs through cfg (see InstallGatewayAPI)
// and returns how many.
func installGatewayAPI(ctx context.Context, root string, cfg *rest.Config) (int, error) {
	files, err := GatewayAPICRDs(ctx, root)
	if err != nil {
		return 0, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		crds, err := readCRDs(f)
		if err != nil {
			return 0, err
		}
		for _, crd := range crds {
			_, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return 0, fmt.Errorf("stack: create CRD %s: %w", crd.GetName(), err)
			}
			n++
		}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	want := []string{"gateways", "httproutes", "grpcroutes", "tlsroutes"}
	for {
		list, err := disc.ServerResourcesForGroupVersion("gateway.networking.k8s.io/v1")
		if err == nil && servesAll(list.APIResources, want) {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("stack: Gateway API not served: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func servesAll(have []metav1.APIResource, want []string) bool {
	names := map[string]bool{}
	for _, r := range have {
		names[r.Name] = true
	}
	for _, w := range want {
		if !names[w] {
			return false
		}
	}
	return true
}

// readCRDs returns the CustomResourceDefinitions of a multi-document YAML file.
func readCRDs(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if obj != nil && u.GetKind() == "CustomResourceDefinition" {
			out = append(out, u)
		}
	}
}
