package stack

import (
	"context"
	"fmt"
	appsv1 "k8s.io/api/apps/v1"
	"net"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// NodeSpec describes a Node for CreateNodes.
type NodeSpec struct {
	Name        string            // also the kubernetes.io/hostname label and the Hostname address
	InternalIP  []string          // status addresses of type InternalIP
	ExternalIP  []string          // status addresses of type ExternalIP
	PodCIDR     string            // e.g. 10.244.1.0/24; RunKubelet takes pod IPs from it
	Labels      map[string]string // added to kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch
	Annotations map[string]string
}

// taintNotReady is the taint the TaintNodesByCondition admission plugin puts
// on new Nodes and the node-lifecycle controller keeps while a Node is not Ready.
var taintNotReady = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}

// CreateNodes creates Nodes that look as a kubelet would register them, with
// the condition Ready=True and the given addresses. There is no kubelet, so
// nothing changes them afterwards but SetNodeReady and the caller. A Node
// that exists already is updated: labels, annotations and addresses are set
// and it is made Ready.
func (s *Stack) CreateNodes(ctx context.Context, nodes ...NodeSpec) error {
	for _, n := range nodes {
		if err := s.createNode(ctx, n); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return nil
}

func (s *Stack) createNode(ctx context.Context, spec NodeSpec) error {
	nodes := s.Kube.CoreV1().Nodes()
	labels := map[string]string{
		corev1.LabelHostname:   spec.Name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
	}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: labels, Annotations: spec.Annotations},
		Spec:       corev1.NodeSpec{PodCIDR: spec.PodCIDR},
	}
	if spec.PodCIDR != "" {
		node.Spec.PodCIDRs = []string{spec.PodCIDR}
	}
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	switch {
	case err == nil:
		node = created
	case apierrors.IsAlreadyExists(err):
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := nodes.Get(ctx, spec.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			for k, v := range labels {
				cur.Labels[k] = v
			}
			if len(spec.Annotations) > 0 && cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			for k, v := range spec.Annotations {
				cur.Annotations[k] = v
			}
			if cur.Spec.PodCIDR == "" && spec.PodCIDR != "" { // immutable once set
				cur.Spec.PodCIDR, cur.Spec.PodCIDRs = spec.PodCIDR, []string{spec.PodCIDR}
			}
			node, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
	default:
		return err
	}

	var addrs []corev1.NodeAddress
	for _, a := range spec.InternalIP {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	}
	for _, a := range spec.ExternalIP {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: a})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: spec.Name})
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, spec.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Addresses = addrs
		cur.Status.Capacity = capacity
		cur.Status.Allocatable = capacity
		cur.Status.NodeInfo.KubeletVersion = "v1.34.0-stack"
		cur.Status.NodeInfo.OperatingSystem = "linux"
		cur.Status.NodeInfo.Architecture = "amd64"
		setNodeReady(cur, true)
		if cur, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return s.syncNotReadyTaint(ctx, cur, true)
	})
}

// SetNodeReady sets the Node's Ready condition, as a kubelet (or, for False,
// the node-lifecycle controller after missed heartbeats) would, and keeps the
// node.kubernetes.io/not-ready:NoSchedule taint in step with it.
func (s *Stack) SetNodeReady(ctx context.Context, name string, ready bool) error {
	nodes := s.Kube.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setNodeReady(cur, ready)
		if cur, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return s.syncNotReadyTaint(ctx, cur, ready)
	})
}

// setNodeReady sets the Ready condition of node, keeping the transition time
// when the status does not change.
func setNodeReady(node *corev1.Node, ready bool) {
	now := metav1.NewTime(time.Now())
	c := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
	}
	if !ready {
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, "KubeletNotReady", "node marked not ready by the test stack"
	}
	for i, old := range node.Status.Conditions {
		if old.Type == corev1.NodeReady {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			node.Status.Conditions[i] = c
			return
		}
	}
	node.Status.Conditions = append(node.Status.Conditions, c)
}

// syncNotReadyTaint adds (not ready) or removes (ready) the not-ready NoSchedule taint.
func (s *Stack) syncNotReadyTaint(ctx context.Context, node *corev1.Node, ready bool) error {
	i := slices.IndexFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taintNotReady) })
	switch {
	case ready && i >= 0:
		node.Spec.Taints = slices.Delete(node.Spec.Taints, i, i+1)
	case !ready && i < 0:
		t := taintNotReady
		t.TimeAdded = &metav1.Time{Time: time.Now()}
		node.Spec.Taints = append(node.Spec.Taints, t)
	default:
		return nil
	}
	_, err := s.Kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	return err
}

// --- DNS ------------------------------------------------------------------------

// Resolver returns a resolver that sends every query over UDP to CoreDNS.
// Give it absolute names ("web.demo.example.org.") so that the search
// domains of /etc/resolv.conf are not tried.
func (s *Stack) Resolver() *net.Resolver {
	addr := s.DNSAddr
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		},
	}
}

// LookupA returns the sorted IPv4 addresses CoreDNS answers for name; none
// (and no error) when the name does not exist or has no A record.
func (s *Stack) LookupA(ctx context.Context, name string) ([]string, error) {
	if name == "" || name[len(name)-1] != '.' {
		name += "."
	}
	ips, err := s.Resolver().LookupIP(ctx, "ip4", name)
	if err != nil {
		if dnsErr, ok := err.(*net.DNSError); ok && dnsErr.IsNotFound {
			return nil, nil
		}
		return nil, err
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	sort.Strings(out)
	return out, nil
}

// Deployment returns a Deployment of replicas Pods labelled app=<name>, each
// with one container listening on port, for the simulated kubelet to run.
func Deployment(namespace, name string, replicas, port int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: name, Image: "nginx:1.27",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port}},
				}}},
			},
		},
	}
}

// TokenKubeconfig writes to dst the kubeconfig src with every user's
// credentials replaced by token (a ServiceAccount's, say), for a client
// that has that identity's permissions alone.
func TokenKubeconfig(src, dst, token string) error {
	cfg, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return err
	}
	for name, ai := range cfg.AuthInfos {
		ai.Token, ai.TokenFile, ai.ClientCertificate, ai.ClientKey = token, "", "", ""
		ai.ClientCertificateData, ai.ClientKeyData = nil, nil
		cfg.AuthInfos[name] = ai
	}
	return clientcmd.WriteToFile(*cfg, dst)
}
