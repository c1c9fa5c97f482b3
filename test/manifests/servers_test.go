package manifests

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/test/stack"
)

func etcdFlags(ctx context.Context, t *testing.T, bin string, rr *rendering) {
	sts := as[appsv1.StatefulSet](t, rr.get(t, "StatefulSet", nsEtcd, "etcd"))
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	if *sts.Spec.Replicas != 3 || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("etcd: %d replicas, %s pod management, want 3 started in parallel", *sts.Spec.Replicas, sts.Spec.PodManagementPolicy)
	}
	headless := as[corev1.Service](t, rr.get(t, "Service", nsEtcd, sts.Spec.ServiceName))
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Error("etcd's peer Service must be headless and publish not-ready addresses")
	}
	var members []string
	for i := range *sts.Spec.Replicas {
		n := fmt.Sprintf("%s-%d", sts.Name, i)
		members = append(members, fmt.Sprintf("%s=https://%s.%s.%s.svc:2380", n, n, sts.Spec.ServiceName, sts.Namespace))
	}
	args := expand(c.Args, map[string]string{"POD_NAME": sts.Name + "-0"})
	if ic, _ := flagValue(args, "initial-cluster"); ic != strings.Join(members, ",") {
		t.Errorf("--initial-cluster=%s, want %s", ic, strings.Join(members, ","))
	}
	server := secretMount(t, pod, c, "etcd-server")
	peer := secretMount(t, pod, c, "etcd-peer")
	for flag, want := range map[string]string{
		"trusted-ca-file": server + "/ca.crt", "cert-file": server + "/tls.crt", "key-file": server + "/tls.key",
		"peer-trusted-ca-file": peer + "/ca.crt", "peer-cert-file": peer + "/tls.crt", "peer-key-file": peer + "/tls.key",
		"client-cert-auth": "true", "peer-client-cert-auth": "true",
	} {
		if got, _ := flagValue(args, flag); got != want {
			t.Errorf("etcd --%s=%s, want %s", flag, got, want)
		}
	}
	// etcd parses every flag before --version prints: a misspelt flag or a bad
	// value fails here.
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "etcd"), append(args, "--version")...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "etcd Version") {
		t.Errorf("etcd does not accept the StatefulSet's flags: %v\n%s", err, out)
	}
}

// rbacBootstrap runs the Job's script, from its ConfigMap, with the Job's
// environment against the stack's etcd (bootstrapped already: the run must
// find everything in place).
func rbacBootstrap(ctx context.Context, t *testing.T, s *stack.Stack, bin string, rr *rendering) {
	job := as[batchv1.Job](t, rr.get(t, "Job", nsEtcd, "etcd-rbac-bootstrap"))
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	cm := as[corev1.ConfigMap](t, rr.get(t, "ConfigMap", nsEtcd, configMapMount(t, pod, c, "/scripts")))
	if want := []string{"bash", "/scripts/rbac-bootstrap.sh"}; !slices.Equal(c.Command, want) {
		t.Errorf("Job command %v, want %v", c.Command, want)
	}
	env := rr.env(t, nsEtcd, c)
	// etcdctl comes from the init container, into the shared volume.
	init := pod.InitContainers[0]
	if got := init.Command[len(init.Command)-1]; got != env["SKYLB_ETCDCTL"] {
		t.Errorf("the init container copies etcdctl to %s, the script runs %s", got, env["SKYLB_ETCDCTL"])
	}
	root := secretMount(t, pod, c, "etcd-root-client")
	local := map[string]string{
		"SKYLB_ETCDCTL":     filepath.Join(bin, "etcdctl"),
		"ETCDCTL_ENDPOINTS": s.EtcdURL,
		"ETCDCTL_CACERT":    filepath.Join(s.Certs, "ca.crt"),
		"ETCDCTL_CERT":      filepath.Join(s.Certs, "root.crt"),
		"ETCDCTL_KEY":       filepath.Join(s.Certs, "root.key"),
	}
	for name, want := range map[string]string{
		"ETCDCTL_CACERT": root + "/ca.crt", "ETCDCTL_CERT": root + "/tls.crt", "ETCDCTL_KEY": root + "/tls.key",
	} {
		if env[name] != want {
			t.Errorf("Job %s=%s, want %s", name, env[name], want)
		}
	}
	script := filepath.Join(t.TempDir(), "rbac-bootstrap.sh")
	if err := os.WriteFile(script, []byte(cm.Data["rbac-bootstrap.sh"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = os.Environ()
	for k, v := range env {
		if lv, ok := local[k]; ok {
			v = lv
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Job's script: %v\n%s", err, out)
	}
	for _, want := range []string{"rbac: user skylb has role skylb", "rbac: user coredns has role coredns", "rbac: authentication already enabled"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the Job's script did not report %q:\n%s", want, out)
		}
	}
}

var corefileVar = regexp.MustCompile(`\{\$([A-Za-z0-9_]+)\}`)

// coreDNS runs the init container's skylb corefile and then CoreDNS with the
// ConfigMap's Corefile and the Deployment's environment, moved to loopback
// ports and the stack's etcd and certificates, until it is ready, and asks
// it for a record put into etcd in each of two zones: the ConfigMap's, and
// a second one added to its SKYLB_ZONE as a user would.
func coreDNS(ctx context.Context, t *testing.T, s *stack.Stack, bin string, rr *rendering) {
	dep := as[appsv1.Deployment](t, rr.get(t, "Deployment", nsCoreDNS, "coredns"))
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	cm := as[corev1.ConfigMap](t, rr.get(t, "ConfigMap", nsCoreDNS, configMapMount(t, pod, c, "/etc/coredns/conf")))
	if want := []string{"-conf", "/run/coredns/Corefile", "-dns.port", "$(SKYLB_DNS_PORT)", "-pidfile", "/run/coredns/coredns.pid"}; !slices.Equal(c.Args, want) {
		t.Fatalf("CoreDNS args %v, want %v", c.Args, want)
	}
	if len(pod.InitContainers) != 1 {
		t.Fatalf("CoreDNS's pod has %d init containers, want 1, skylb corefile", len(pod.InitContainers))
	}
	init := pod.InitContainers[0]
	if want := []string{"corefile", "--in=/etc/coredns/conf/Corefile", "--out=/run/coredns/Corefile"}; !slices.Equal(init.Args, want) {
		t.Fatalf("CoreDNS's init container args %v, want %v", init.Args, want)
	}
	if init.Image != pod.Containers[1].Image {
		t.Errorf("CoreDNS's init container runs %s, the reloader %s: want skylb's one image", init.Image, pod.Containers[1].Image)
	}
	corefile := cm.Data["Corefile"]
	env := rr.env(t, nsCoreDNS, c)
	initEnv := rr.env(t, nsCoreDNS, init)
	zone := initEnv["SKYLB_ZONE"]
	if zone == "" || initEnv["SKYLB_ZONE"] != env["SKYLB_ZONE"] {
		t.Fatalf("SKYLB_ZONE: %q for the init container, %q for CoreDNS; want config.env's zone for both", initEnv["SKYLB_ZONE"], env["SKYLB_ZONE"])
	}
	const second = "manifests-second.example"
	initEnv["SKYLB_ZONE"] = zone + "," + second
	for name := range initEnv {
		env[name] = initEnv[name] // the variables the Corefile's zones were
	}

	// Every {$VAR} of the Corefile (outside comments) is set: an unset one
	// would be empty.
	var directives []string
	for _, line := range strings.Split(corefile, "\n") {
		line, _, _ = strings.Cut(line, "#")
		directives = append(directives, line)
	}
	vars := corefileVar.FindAllStringSubmatch(strings.Join(directives, "\n"), -1)
	if len(vars) == 0 {
		t.Error("the Corefile uses no {$VAR}")
	}
	for _, m := range vars {
		if _, ok := env[m[1]]; !ok {
			t.Errorf("the Deployment does not set %s, which the Corefile uses", m[1])
		}
	}
	etcdTLS := secretMount(t, pod, c, "coredns-etcd-client")
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, want := range map[string]string{
		"SKYLB_ETCD_CA": etcdTLS + "/ca.crt", "SKYLB_ETCD_CERT": etcdTLS + "/tls.crt", "SKYLB_ETCD_KEY": etcdTLS + "/tls.key",
		"SKYLB_DNS_BIND": "0.0.0.0", "SKYLB_DNS_PORT": fmt.Sprint(ports["dns"]),
		"SKYLB_HEALTH_ADDR":  fmt.Sprintf(":%d", c.LivenessProbe.HTTPGet.Port.IntValue()),
		"SKYLB_READY_ADDR":   fmt.Sprintf(":%d", c.ReadinessProbe.HTTPGet.Port.IntValue()),
		"SKYLB_METRICS_ADDR": fmt.Sprintf(":%d", ports["metrics"]),
	} {
		if env[name] != want {
			t.Errorf("CoreDNS %s=%q, want %q", name, env[name], want)
		}
	}
	if c.LivenessProbe.HTTPGet.Path != "/health" || c.ReadinessProbe.HTTPGet.Path != "/ready" {
		t.Error("CoreDNS probes: want /health for liveness and /ready for readiness")
	}

	var free [4]int
	for i := range free {
		port, err := stack.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		free[i] = port
	}
	dnsPort, health, ready, metrics := free[0], free[1], free[2], free[3]
	local := map[string]string{
		"SKYLB_DNS_BIND":     "127.0.0.1",
		"SKYLB_DNS_PORT":     fmt.Sprint(dnsPort),
		"SKYLB_ETCD_CA":      filepath.Join(s.Certs, "ca.crt"),
		"SKYLB_ETCD_CERT":    filepath.Join(s.Certs, "coredns.crt"),
		"SKYLB_ETCD_KEY":     filepath.Join(s.Certs, "coredns.key"),
		"SKYLB_HEALTH_ADDR":  fmt.Sprintf("127.0.0.1:%d", health),
		"SKYLB_DNS_LAMEDUCK": "0s",
		"SKYLB_READY_ADDR":   fmt.Sprintf("127.0.0.1:%d", ready),
		"SKYLB_METRICS_ADDR": fmt.Sprintf("127.0.0.1:%d", metrics),
	}
	maps.Copy(local, stack.EtcdEndpointVars([]string{s.EtcdURL}))
	runEnv := maps.Clone(env)
	maps.Copy(runEnv, local)
	// The init container, then CoreDNS, with the pod's directories here.
	confDir, runDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(confDir, "Corefile"), []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := strings.NewReplacer("/etc/coredns/conf", confDir, "/run/coredns", runDir)
	moved := func(args []string) []string {
		for i, a := range args {
			args[i] = paths.Replace(a)
		}
		return args
	}
	skylb, err := s.BuildSkylb(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, skylb, moved(expand(init.Args, initEnv))...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range initEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the init container's skylb corefile: %v\n%s", err, out)
	}
	// The Deployment's args, expanded as the kubelet does.
	p := startProcess(t, "coredns", runEnv, filepath.Join(bin, "coredns"), moved(expand(c.Args, runEnv))...)
	if err := p.waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/ready", ready), 20*time.Second); err != nil {
		t.Fatalf("CoreDNS with the ConfigMap's Corefile: %v", err)
	}

	for _, zone := range []string{zone, second} {
		served(ctx, t, s, bin, p, dnsPort, zone)
	}
}

// served puts a record of zone into etcd as skylb, and waits until the
// CoreDNS p on dnsPort answers it, read as coredns.
func served(ctx context.Context, t *testing.T, s *stack.Stack, bin string, p *process, dnsPort int, zone string) {
	// A record written as skylb is served to DNS clients, read as coredns.
	labels := strings.Split(zone, ".")
	slices.Reverse(labels)
	key := "/skydns/" + strings.Join(labels, "/") + "/manifests-test/x1"
	etcdctl := func(args ...string) {
		base := []string{"--endpoints=" + s.EtcdURL, "--cacert=" + filepath.Join(s.Certs, "ca.crt"),
			"--cert=" + filepath.Join(s.Certs, "skylb.crt"), "--key=" + filepath.Join(s.Certs, "skylb.key")}
		if out, err := exec.CommandContext(ctx, filepath.Join(bin, "etcdctl"), append(base, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("etcdctl %v: %v\n%s", args, err, out)
		}
	}
	etcdctl("put", key, `{"host":"192.0.2.55","ttl":30}`)
	defer etcdctl("del", key)
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", fmt.Sprintf("127.0.0.1:%d", dnsPort))
	}}
	name := "manifests-test." + zone + "."
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
		got, _ = res.LookupHost(lctx, name)
		lcancel()
		if slices.Equal(got, []string{"192.0.2.55"}) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !slices.Equal(got, []string{"192.0.2.55"}) {
		t.Errorf("CoreDNS answers %s with %v, want [192.0.2.55]%s", name, got, p.tail())
	}
}
