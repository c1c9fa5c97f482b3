package images

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// PauseRef is the sandbox ("pause") image the nodes' containerd runs first in
// every pod; test/cluster names it in its containerd configuration.
const PauseRef = "registry.k8s.io/pause:3.10"

// Refs are the full references (as containerd names them) of the images the
// repository's manifests run.
type Refs struct {
	Skylb   string // manifests/kustomization.yaml: ghcr.io/skylb/skylb
	Etcd    string // etcd/kustomization.yaml: registry.k8s.io/etcd
	Debian  string // etcd/kustomization.yaml: debian (the RBAC Job)
	CoreDNS string // coredns/kustomization.yaml: coredns/coredns
	Pause   string // PauseRef
}

// kustomization is the part of a kustomization.yaml that names images.
type kustomization struct {
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// ReadRefs reads the image references from the kustomizations of the
// repository at root.
func ReadRefs(root string) (Refs, error) {
	refs := Refs{Pause: PauseRef}
	for _, want := range []struct {
		dir, name string
		ref       *string
	}{
		{"manifests", "ghcr.io/skylb/skylb", &refs.Skylb},
		{"etcd", "registry.k8s.io/etcd", &refs.Etcd},
		{"etcd", "debian", &refs.Debian},
		{"coredns", "coredns/coredns", &refs.CoreDNS},
	} {
		ref, err := kustomizedRef(filepath.Join(root, want.dir, "kustomization.yaml"), want.name)
		if err != nil {
			return Refs{}, err
		}
		*want.ref = ref
	}
	return refs, nil
}

// kustomizedRef returns the full reference the kustomization at path gives
// the image named name.
func kustomizedRef(path, name string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var k kustomization
	if err := yaml.Unmarshal(b, &k); err != nil {
		return "", fmt.Errorf("parse %s: %w", path, err)
	}
	for _, img := range k.Images {
		if img.Name != name {
			continue
		}
		if img.NewTag == "" {
			return "", fmt.Errorf("%s: image %s has no newTag", path, name)
		}
		repo := img.Name
		if img.NewName != "" {
			repo = img.NewName
		}
		return Normalize(repo) + ":" + img.NewTag, nil
	}
	return "", fmt.Errorf("%s: no images entry for %s", path, name)
}

// Normalize returns the repository as containerd names it: Docker Hub's
// short names get their registry (docker.io) and, for official images, the
// library/ namespace.
func Normalize(repo string) string {
	first, _, found := strings.Cut(repo, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return repo
	}
	if !found {
		repo = "library/" + repo
	}
	return "docker.io/" + repo
}

// Tag returns the tag of a reference "repo:tag".
func Tag(ref string) string {
	return ref[strings.LastIndexByte(ref, ':')+1:]
}
