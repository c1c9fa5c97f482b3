package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skylb/skylb/test/images"
)

// cgroupRoot is where the cgroup v1 hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

func (n Node) containerdSocket() string { return filepath.Join(n.Dir, "containerd.sock") }

// startNode brings up one node: network, mount namespace, containerd with
// the images, kubelet and kube-proxy.
func (c *Cluster) startNode(ctx context.Context, o Options, authority *ca, n *Node, all []Node) error {
	for _, d := range []string{"cni", "cni-ipam", "kubelet", "runc", "run-up", "run-work", "var-up", "var-work", "pki", "certs.d", "containerd"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := c.setupNodeNet(ctx, *n, all); err != nil {
		return err
	}
	// The node's mount namespace, held by a sleeper: /run and /var are
	// overlays whose upper directories are the node's, so that the paths
	// containerd, runc and the kubelet hard-code (/run/containerd,
	// /var/log/pods, /var/lib/cni...) are the node's own. The kubelet's
	// root directory is made a shared mount of its own here, as the kubelet
	// would at its start: it does that while it already creates its
	// pod-resources socket in that directory, and a socket made before the
	// bind mount cannot be renamed into place after it (EXDEV), which ends
	// the kubelet.
	ready := filepath.Join(n.Dir, "mntns.ready")
	holder, err := c.startProc(n.Name+"/mntns", "unshare", "--mount", "--propagation", "private", "sh", "-ec",
		fmt.Sprintf("mount -t overlay overlay -o lowerdir=/run,upperdir=%[1]s/run-up,workdir=%[1]s/run-work /run\n"+
			"mount -t overlay overlay -o lowerdir=/var,upperdir=%[1]s/var-up,workdir=%[1]s/var-work /var\n"+
			"mount --bind %[1]s/kubelet %[1]s/kubelet\nmount --make-rshared %[1]s/kubelet\n"+
			"touch %[2]s\nexec sleep infinity", n.Dir, ready))
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Second, 50*time.Millisecond, n.Name+" mount namespace", func(context.Context) error {
		if !holder.alive() {
			return fmt.Errorf("the mount namespace holder exited: see %s", holder.Log)
		}
		_, err := os.Stat(ready)
		return err
	}); err != nil {
		return err
	}
	if err := c.record(func(*state) { n.MountPID = holder.PID }); err != nil {
		return err
	}
	if err := c.writeNodeConfig(*n, authority); err != nil {
		return err
	}
	if _, err := c.startProc(n.Name+"/containerd", append(n.enter(), "containerd", "--config", filepath.Join(n.Dir, "containerd.toml"))...); err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, 200*time.Millisecond, n.Name+" containerd", func(ctx context.Context) error {
		_, err := run(ctx, append(n.enter(), "ctr", "-a", n.containerdSocket(), "version")...)
		return err
	}); err != nil {
		return err
	}
	if err := c.importInto(ctx, *n, o.Images); err != nil {
		return err
	}
	c.logf("%s: containerd up, %d images imported", n.Name, len(o.Images))
	if err := c.record(func(s *state) { s.Cgroups = append(s.Cgroups, n.cgroup()) }); err != nil {
		return err
	}
	for _, h := range cgroupHierarchies(false) {
		if err := os.MkdirAll(filepath.Join(h, n.cgroup()), 0o755); err != nil {
			return err
		}
	}
	kubeProxy := filepath.Join(o.Bin, "kube-proxy")
	if _, err := c.startProc(n.Name+"/kubelet", append(n.enter(), filepath.Join(o.Bin, "kubelet"),
		"--config="+filepath.Join(n.Dir, "kubelet.yaml"),
		"--kubeconfig="+filepath.Join(c.Dir, n.Name+".kubeconfig"),
		"--root-dir="+filepath.Join(n.Dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.Dir, "pki"),
		"--hostname-override="+n.Name,
		"--node-ip="+n.IP.String(),
		"--v=1")...); err != nil {
		return err
	}
	_, err = c.startProc(n.Name+"/kube-proxy", append(n.enter(), kubeProxy,
		"--config="+filepath.Join(n.Dir, "kube-proxy.yaml"), "--v=1")...)
	return err
}

// cgroupHierarchies returns the mounted cgroup v1 hierarchies, and with
// unified the unified one of a hybrid setup too: the kubelet does not use
// it, but runc makes the containers' cgroups there as well.
func cgroupHierarchies(unified bool) []string {
	entries, _ := os.ReadDir(cgroupRoot)
	var out []string
	for _, e := range entries {
		if e.IsDir() && (unified || e.Name() != "unified") {
			out = append(out, filepath.Join(cgroupRoot, e.Name()))
		}
	}
	return out
}

// writeNodeConfig writes the node's containerd, CNI, kubelet and kube-proxy
// configurations and the kubelet's serving certificate.
func (c *Cluster) writeNodeConfig(n Node, authority *ca) error {
	if err := authority.issue(filepath.Join(n.Dir, "pki"), "kubelet", certSpec{
		cn: n.Name, ips: []net.IP{n.IP.AsSlice()}, dns: []string{n.Name}, server: true,
	}); err != nil {
		return err
	}
	files := map[string]string{
		"containerd.toml": fmt.Sprintf(containerdConfig, n.Dir, images.PauseRef),
		"cni/10-skylb.conflist": fmt.Sprintf(cniConfig, n.Dir, n.PodCIDR,
			n.PodCIDR.Addr().Next()),
		"kubelet.yaml": fmt.Sprintf(kubeletConfig, n.cgroup(), n.containerdSocket(), n.IP,
			filepath.Join(n.Dir, "pki"), filepath.Join(c.pki(), "ca.crt"), dnsIP, clusterDomain),
		"kube-proxy.yaml": fmt.Sprintf(kubeProxyConfig, filepath.Join(c.Dir, "proxy.kubeconfig"), n.Name,
			podNet, n.IP),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(strings.TrimLeft(content, "\n")), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig is the node's containerd configuration (containerd 1.6,
// config version 2). Arguments: the node's directory, the sandbox image.
//
// restrict_oom_score_adj: without CAP_SYS_RESOURCE (as in some containers
// this runs in) nothing may lower oom_score_adj, and runc fails to start the
// pause container that asks for -998. cgroupfs, not systemd: the kubelet's
// cgroupRoot is a plain directory.
const containerdConfig = `
version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "%[1]s/containerd.sock"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[2]s"
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "%[1]s/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[1]s/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "%[1]s/certs.d"
`

// cniConfig is the node's CNI network: a bridge with host-local addresses
// from the node's pod range (no masquerade: every address is routed), the
// portmap plugin for hostPort, and loopback. Arguments: the node's
// directory, its pod range, the range's gateway.
const cniConfig = `
{"cniVersion": "0.4.0", "name": "skylb", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "%[1]s/cni-ipam", "ranges": [[{"subnet": "%[2]s", "gateway": "%[3]s"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]}
`

// kubeletConfig is the node's KubeletConfiguration. Arguments: cgroupRoot,
// containerd socket, node IP, certificate directory, client CA, cluster DNS,
// cluster domain.
const kubeletConfig = `
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /%[1]s
cgroupsPerQOS: true
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://%[2]s
address: %[3]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %[4]s/kubelet.crt
tlsPrivateKeyFile: %[4]s/kubelet.key
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: %[5]s}}
authorization: {mode: AlwaysAllow}
clusterDNS: [%[6]s]
clusterDomain: %[7]s
resolvConf: ""
serializeImagePulls: false
maxPods: 110
evictionHard: {memory.available: "100Mi", nodefs.available: "2%%", imagefs.available: "2%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
imageMinimumGCAge: 876000h
nodeStatusReportFrequency: 10s
fileCheckFrequency: 5s
syncFrequency: 10s
`

// kubeProxyConfig is the node's KubeProxyConfiguration: iptables mode,
// NodePorts on the node IP only, conntrack sysctls left alone. Arguments:
// kubeconfig, node name, cluster (pod) range, node IP.
const kubeProxyConfig = `
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %[1]s}
mode: iptables
hostnameOverride: %[2]s
clusterCIDR: %[3]s
nodePortAddresses: ["%[4]s/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
`
