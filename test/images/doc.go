// Package images builds the container images the real-cluster test
// (test/cluster) runs, without a container engine or a registry: each image is
// one layer written with go-containerregistry into a docker-archive tarball,
// which "ctr -n k8s.io images import" loads into a node's containerd.
//
// The references come from the repository's kustomizations (ReadRefs), so that
// the images built here are exactly those the manifests ask for:
//
//   - skylb (manifests/kustomization.yaml), built as the Dockerfile builds it:
//     the same go build flags, read from the Dockerfile's RUN line, on the files
//     of distroless static:nonroot that skylb needs;
//   - registry.k8s.io/etcd (etcd/kustomization.yaml): etcd, etcdctl and etcdutl
//     of the tag's version in /usr/local/bin, a static /bin/sh (Debian's
//     bash-static) and /bin/cp (cmd/cp), the layout of upstream's image;
//   - debian (etcd/kustomization.yaml), a stand-in for the slim image the RBAC
//     Job runs its script in: bash, coreutils, grep, sed and mawk unpacked
//     from Debian packages;
//   - coredns/coredns (coredns/kustomization.yaml), CoreDNS of the tag's
//     version, with the plugins of skylb's Corefiles and of the test
//     cluster's own DNS (test/tools/coredns, built by scripts/build-bins.sh);
//   - PauseRef, the sandbox image of the nodes' containerd (cmd/pause);
//   - with Options.Flux only, Flux's source-controller and
//     kustomize-controller (SourceControllerRef, KustomizeControllerRef),
//     with the layout of upstream's images, from the binaries
//     scripts/build-bins.sh builds;
//   - with Options.CertManager only, cert-manager's controller
//     (CertManagerControllerRef), a main of test/tools/cert-manager that
//     runs the controllers of the module's library;
//   - with Options.Agnhost only, upstream's e2e test image (AgnhostRef), the
//     agnhost command scripts/build-bins.sh builds from k8s.io/kubernetes
//     on the Debian packages of the commands the network specs run in it.
//
// BuildSkylb builds skylb's image for users the same way, for several
// platforms at once (an image index, the binaries cross-compiled), with OCI
// labels; WriteLayout and WriteDockerArchive write it out. cmd/skylb-image,
// which scripts/image.sh runs, writes or pushes it.
//
// A built tarball is kept under Options.Cache, named by a hash of everything
// that goes into it, so that a second Build only checks its inputs.
package images
