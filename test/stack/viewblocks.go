package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Where CoreDNS's manifests keep the views' server blocks
// (coredns/deploy/views.yaml), and the flag that has skylb write them there.
const (
	ViewsNamespace = "skylb-coredns"
	ViewsConfigMap = "coredns-views"
	ViewsKey       = "skylb.view"
	ViewsFlag      = "--coredns-views=" + ViewsNamespace + "/" + ViewsConfigMap
)

// CreateViewsConfigMap creates the ConfigMap of coredns/deploy/views.yaml as
// it is shipped, and its namespace.
func (s *Stack) CreateViewsConfigMap(ctx context.Context) error {
	b, err := os.ReadFile(filepath.Join(s.Root, "coredns", "deploy", "views.yaml"))
	if err != nil {
		return err
	}
	var cm *corev1.ConfigMap
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for cm == nil {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return errors.New("stack: coredns/deploy/views.yaml holds no ConfigMap")
		} else if err != nil {
			return fmt.Errorf("stack: coredns/deploy/views.yaml: %w", err)
		}
		if obj["kind"] == "ConfigMap" {
			cm = &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, cm); err != nil {
				return err
			}
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cm.Namespace}}
	if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = s.Kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

// ViewBlocks waits until the views' ConfigMap holds skylb's blocks and ok
// says they are those wanted, then returns them; a view's block that is not
// there yet is a change in flight.
func (s *Stack) ViewBlocks(ctx context.Context, ok func(blocks string) bool) (string, error) {
	last := "no ConfigMap"
	for {
		cm, err := s.Kube.CoreV1().ConfigMaps(ViewsNamespace).Get(ctx, ViewsConfigMap, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case ok(cm.Data[ViewsKey]):
			return cm.Data[ViewsKey], nil
		default:
			last = fmt.Sprintf("%s holds %q", ViewsKey, cm.Data[ViewsKey])
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("stack: the views' blocks in ConfigMap %s/%s: %s", ViewsNamespace, ViewsConfigMap, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// CorefileWith writes into dir the shipped Corefile (coredns/Corefile under
// root) and, beside it, each of files (name -> contents), as CoreDNS's pod
// sees its ConfigMaps; it returns the Corefile's path.
func CorefileWith(root, dir string, files map[string]string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	corefile, err := os.ReadFile(filepath.Join(root, "coredns", "Corefile"))
	if err != nil {
		return "", err
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, "Corefile")
	return path, os.WriteFile(path, corefile, 0o644)
}
