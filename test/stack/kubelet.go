package stack

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/skylb/skylb/internal/kubeclient"
)

// AnnotationReady set to "false" on a Pod makes Kubelet report it not Ready
// (containers running, readiness probe failing); any other value or none
// makes it Ready. Changing the annotation flips the Pod's readiness.
const AnnotationReady = "stack.skylb.io/ready"

// Kubelet binds unscheduled Pods to nodes (round robin over the given nodes,
// skipping ahead to a node with fewer pods when the load is uneven, or the
// Pod's spec.nodeSelector kubernetes.io/hostname) with a Binding, and
// marks bound Pods Running with a pod IP taken from the node's PodCIDR
// (distinct per pod) and Ready/ContainersReady conditions True — unless the
// Pod has the annotation "stack.skylb.io/ready: \"false\"", then Ready is
// False (changing the annotation flips it).
//
// Like a scheduler it binds only to Nodes that exist, are Ready and not
// cordoned; Pods wait (Pending) while there is none. Like a kubelet it
// finishes the graceful deletion of its Pods at once (their containers stop
// instantly) and leaves Pods of other nodes alone.
type Kubelet struct {
	// Logf, when set, receives a line per binding, status change and deletion.
	Logf func(format string, args ...any)

	kube  kubernetes.Interface
	nodes []string // managed nodes; empty: every Node

	pods      corelisters.PodLister
	nodeList  corelisters.NodeLister
	podsIndex cache.Indexer
	queue     workqueue.TypedRateLimitingInterface[string]

	mu     sync.Mutex
	next   int                                 // round-robin position
	bound  map[types.UID]string                // pod -> node it was bound to here
	ips    map[string]map[netip.Addr]types.UID // node -> pod IP -> pod
	podIPs map[types.UID]podAddr               // pod -> its IP
}

// podAddr is the IP a Pod holds on a node.
type podAddr struct {
	node string
	ip   netip.Addr
}

// NewKubelet returns a Kubelet for the named nodes (empty: every Node of the
// cluster, in name order); Run starts it.
func NewKubelet(kube kubernetes.Interface, nodes []string) *Kubelet {
	return &Kubelet{
		kube:   kube,
		nodes:  slices.Clone(nodes),
		ips:    map[string]map[netip.Addr]types.UID{},
		podIPs: map[types.UID]podAddr{},
		bound:  map[types.UID]string{},
	}
}

// RunKubelet runs a Kubelet for the named nodes until ctx ends.
func RunKubelet(ctx context.Context, kube kubernetes.Interface, nodes []string) {
	NewKubelet(kube, nodes).Run(ctx)
}

const byNode = "node"

// Run watches Pods and Nodes and acts on them until ctx ends.
func (k *Kubelet) Run(ctx context.Context) {
	// Two informers of their own rather than client-go's informer factory,
	// which links the informers and listers of every API group.
	core := k.kube.CoreV1().RESTClient()
	podInf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(core, "pods", metav1.NamespaceAll, fields.Everything()),
		&corev1.Pod{}, 0, cache.Indexers{byNode: func(obj any) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		}})
	nodeInf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(core, "nodes", metav1.NamespaceAll, fields.Everything()),
		&corev1.Node{}, 0, cache.Indexers{})
	k.podsIndex = podInf.GetIndexer()
	k.pods, k.nodeList = corelisters.NewPodLister(k.podsIndex), corelisters.NewNodeLister(nodeInf.GetIndexer())
	k.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 2*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "stack-kubelet"})
	defer k.queue.ShutDown()

	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	_, _ = podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				k.release(pod.UID)
			}
		},
	})
	nodeChanged := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		node, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		// Pending Pods may now fit; Pods of the node may get their IPs.
		for _, nodeName := range []string{"", node.Name} {
			objs, _ := k.podsIndex.ByIndex(byNode, nodeName)
			for _, o := range objs {
				enqueue(o)
			}
		}
	}
	_, _ = nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    nodeChanged,
		UpdateFunc: func(_, obj any) { nodeChanged(obj) },
		DeleteFunc: nodeChanged,
	})

	var informers sync.WaitGroup
	defer informers.Wait()
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	for _, inf := range []cache.SharedIndexInformer{podInf, nodeInf} {
		informers.Go(func() { inf.RunWithContext(ictx) })
	}
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, nodeInf.HasSynced) {
		return
	}
	k.adoptIPs()

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	k.queue.ShutDown()
	wg.Wait()
}

func (k *Kubelet) logf(format string, args ...any) {
	if k.Logf != nil {
		k.Logf(format, args...)
	}
}

func (k *Kubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			if !apierrors.IsConflict(err) {
				k.logf("kubelet: pod %s: %v (retrying)", key, err)
			}
			k.queue.AddRateLimited(key)
		}
		return true
	}
	k.queue.Forget(key)
	return true
}

// manages reports whether the Kubelet runs the Pods of the named node.
func (k *Kubelet) manages(node string) bool {
	if node == "" {
		return false
	}
	return len(k.nodes) == 0 || slices.Contains(k.nodes, node)
}

func (k *Kubelet) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case pod.Spec.NodeName == "":
		if pod.DeletionTimestamp != nil {
			return nil
		}
		return k.bind(ctx, pod)
	case !k.manages(pod.Spec.NodeName):
		return nil
	case pod.DeletionTimestamp != nil:
		// The containers stop at once: finish the graceful deletion.
		zero := int64(0)
		err := k.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err == nil {
			k.logf("kubelet: pod %s/%s on %s deleted", ns, name, pod.Spec.NodeName)
		}
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return nil
	}
	return k.run(ctx, pod)
}

// candidates returns the nodes a Pod may be bound to, in round-robin order.
func (k *Kubelet) candidates(pod *corev1.Pod) []string {
	names := k.nodes
	if len(names) == 0 {
		all, _ := k.nodeList.List(labels.Everything())
		for _, n := range all {
			names = append(names, n.Name)
		}
		sort.Strings(names)
	}
	want := pod.Spec.NodeSelector[corev1.LabelHostname]
	var out []string
	for _, name := range names {
		node, err := k.nodeList.Get(name)
		if err != nil || node.Spec.Unschedulable || node.DeletionTimestamp != nil || !NodeReady(node) {
			continue
		}
		if want != "" && node.Labels[corev1.LabelHostname] != want && node.Name != want {
			continue
		}
		out = append(out, name)
	}
	return out
}

// NodeReady reports whether a Node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// bind assigns a Pod to a candidate node: the next one in round-robin order,
// or past it the first with fewer pods, so that pods spread as a scheduler
// spreads them.
func (k *Kubelet) bind(ctx context.Context, pod *corev1.Pod) error {
	nodes := k.candidates(pod)
	if len(nodes) == 0 {
		return nil // a Node event brings the Pod back
	}
	k.mu.Lock()
	best, bestCount := -1, 0
	for i := range nodes {
		j := (k.next + i) % len(nodes)
		if n := k.podCount(nodes[j]); best < 0 || n < bestCount {
			best, bestCount = j, n
		}
	}
	node := nodes[best]
	k.next = best + 1
	k.bound[pod.UID] = node
	k.mu.Unlock()
	err := k.kube.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		k.mu.Lock()
		delete(k.bound, pod.UID)
		k.mu.Unlock()
	}
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // deleted, or bound meanwhile
	}
	if err == nil {
		k.logf("kubelet: pod %s/%s bound to %s", pod.Namespace, pod.Name, node)
	}
	return err
}

// podCount returns the number of live pods on a node: those the cache shows
// there and those bound there that the cache does not show yet. k.mu is held.
func (k *Kubelet) podCount(node string) int {
	uids := map[types.UID]bool{}
	objs, _ := k.podsIndex.ByIndex(byNode, node)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			uids[p.UID] = true
		}
	}
	for uid, n := range k.bound {
		if n == node {
			uids[uid] = true
		}
	}
	return len(uids)
}

// run reports a bound Pod Running, with its IP and readiness.
func (k *Kubelet) run(ctx context.Context, pod *corev1.Pod) error {
	node, err := k.nodeList.Get(pod.Spec.NodeName)
	if err != nil {
		return nil // a Node event brings the Pod back
	}
	hostIP := nodeInternalIP(node)
	var podIP netip.Addr
	if pod.Spec.HostNetwork {
		podIP = hostIP
	} else if podIP, err = k.allocate(node, pod); err != nil {
		return err
	}
	ready := pod.Annotations[AnnotationReady] != "false"

	status := pod.Status.DeepCopy()
	now := metav1.NewTime(time.Now())
	status.Phase = corev1.PodRunning
	if hostIP.IsValid() {
		status.HostIP = hostIP.String()
		status.HostIPs = []corev1.HostIP{{IP: hostIP.String()}}
	}
	if podIP.IsValid() {
		status.PodIP = podIP.String()
		status.PodIPs = []corev1.PodIP{{IP: podIP.String()}}
	}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	setPodCondition(status, corev1.PodScheduled, true, now)
	setPodCondition(status, corev1.PodReadyToStartContainers, true, now)
	setPodCondition(status, corev1.PodInitialized, true, now)
	setPodCondition(status, corev1.ContainersReady, ready, now)
	setPodCondition(status, corev1.PodReady, ready, now)
	status.ContainerStatuses = containerStatuses(pod, status.ContainerStatuses, ready, now)
	if apiequality.Semantic.DeepEqual(status, &pod.Status) {
		return nil
	}
	updated := pod.DeepCopy()
	updated.Status = *status
	if _, err := k.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if pod.Status.Phase != corev1.PodRunning || PodReady(&pod.Status) != ready {
		k.logf("kubelet: pod %s/%s on %s running, ip %s, ready %t", pod.Namespace, pod.Name, node.Name, status.PodIP, ready)
	}
	return nil
}

// PodReady reports whether a Pod's Ready condition is True.
func PodReady(st *corev1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setPodCondition sets a condition, keeping its transition time when the
// status does not change.
func setPodCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, now metav1.Time) {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
	if !ok {
		c.Status = corev1.ConditionFalse
		if t == corev1.PodReady || t == corev1.ContainersReady {
			c.Reason = "ContainersNotReady"
			c.Message = "annotation " + AnnotationReady + " is false"
		}
	}
	for i, old := range st.Conditions {
		if old.Type == t {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// containerStatuses reports every container running, ready as the Pod.
func containerStatuses(pod *corev1.Pod, old []corev1.ContainerStatus, ready bool, now metav1.Time) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		started := now
		for _, o := range old {
			if o.Name == c.Name && o.State.Running != nil {
				started = o.State.Running.StartedAt
			}
		}
		isTrue := true
		out = append(out, corev1.ContainerStatus{
			Name:        c.Name,
			Image:       c.Image,
			ImageID:     "stack://" + c.Image,
			ContainerID: fmt.Sprintf("stack://%s/%s", pod.UID, c.Name),
			Ready:       ready,
			Started:     &isTrue,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		})
	}
	return out
}

// nodeInternalIP returns the Node's first InternalIP (else its first address).
func nodeInternalIP(node *corev1.Node) netip.Addr {
	var first netip.Addr
	for _, a := range node.Status.Addresses {
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			continue
		}
		if a.Type == corev1.NodeInternalIP {
			return ip
		}
		if !first.IsValid() {
			first = ip
		}
	}
	return first
}

// podCIDR returns the Node's pod range; for a Node without one,
// 10.250.<n>.0/24, n being the Node's place in name order among all Nodes.
func (k *Kubelet) podCIDR(node *corev1.Node) (netip.Prefix, error) {
	if node.Spec.PodCIDR != "" {
		return netip.ParsePrefix(node.Spec.PodCIDR)
	}
	all, _ := k.nodeList.List(labels.Everything())
	names := make([]string, 0, len(all))
	for _, n := range all {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	i := slices.Index(names, node.Name)
	if i < 0 || i > 255 {
		return netip.Prefix{}, fmt.Errorf("node %s has no spec.podCIDR", node.Name)
	}
	return netip.ParsePrefix(fmt.Sprintf("10.250.%d.0/24", i))
}

// allocate returns the Pod's IP: the one it has if it is free and in the
// node's range, else the lowest free host address of the range (from .2).
func (k *Kubelet) allocate(node *corev1.Node, pod *corev1.Pod) (netip.Addr, error) {
	prefix, err := k.podCIDR(node)
	if err != nil {
		return netip.Addr{}, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if cur, ok := k.podIPs[pod.UID]; ok && cur.node == node.Name && prefix.Contains(cur.ip) {
		return cur.ip, nil
	}
	used := k.ips[node.Name]
	if used == nil {
		used = map[netip.Addr]types.UID{}
		k.ips[node.Name] = used
	}
	if ip, err := netip.ParseAddr(pod.Status.PodIP); err == nil && prefix.Contains(ip) {
		if owner, taken := used[ip]; !taken || owner == pod.UID {
			used[ip] = pod.UID
			k.podIPs[pod.UID] = podAddr{node.Name, ip}
			return ip, nil
		}
	}
	prefix = prefix.Masked()
	for ip := prefix.Addr().Next().Next(); prefix.Contains(ip); ip = ip.Next() {
		if !prefix.Contains(ip.Next()) && ip.Is4() {
			break // the broadcast address
		}
		if _, taken := used[ip]; !taken {
			used[ip] = pod.UID
			k.podIPs[pod.UID] = podAddr{node.Name, ip}
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("node %s: no free address in %s", node.Name, prefix)
}

// adoptIPs records the IPs existing Pods hold, before any new one is handed out.
func (k *Kubelet) adoptIPs() {
	pods, _ := k.pods.List(labels.Everything())
	sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	for _, pod := range pods {
		if !k.manages(pod.Spec.NodeName) || pod.Status.PodIP == "" || pod.Spec.HostNetwork {
			continue
		}
		node, err := k.nodeList.Get(pod.Spec.NodeName)
		if err != nil {
			continue
		}
		_, _ = k.allocate(node, pod)
	}
}

// release frees the IP of a deleted Pod.
func (k *Kubelet) release(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.bound, uid)
	if cur, ok := k.podIPs[uid]; ok {
		delete(k.ips[cur.node], cur.ip)
		delete(k.podIPs, uid)
	}
}

// RunKubelet runs a Kubelet for the named nodes until ctx ends, as a kubelet
// runs beside an API server that may restart: its client waits for the API
// server to come back rather than failing (internal/kubeclient, as skylb's
// does), so that its informers resume within a second instead of after
// client-go's back-off, which grows to a minute over two outages in two
// minutes. It logs what it does to <Dir>/logs/kubelet.log.
func (s *Stack) RunKubelet(ctx context.Context, nodes []string) error {
	f, err := os.OpenFile(s.LogFile("kubelet"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	log := logrus.New()
	log.SetOutput(f)
	cfg := rest.CopyConfig(s.RestConfig)
	cfg.Wrap(kubeclient.New(ctx.Done(), 0, log).Wrap)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		f.Close()
		return err
	}
	k := NewKubelet(kube, nodes)
	k.Logf = func(format string, args ...any) { log.Infof(format, args...) }
	go func() {
		defer f.Close()
		k.Run(ctx)
	}()
	return nil
}
