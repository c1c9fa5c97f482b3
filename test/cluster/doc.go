// Package cluster runs a real Kubernetes cluster on this machine, for tests
// that deploy the repository's manifests (etcd/, coredns/, manifests/) in
// pods: the upstream control plane, and nodes with a real kubelet,
// containerd, runc, the CNI bridge and kube-proxy. It needs root.
//
// # Layout
//
// The control plane runs in the host network namespace: etcd (plain HTTP on
// 127.0.0.1, random ports), kube-apiserver on the bridge address
// https://10.213.0.1:6443 (authorization Node,RBAC; PodSecurity admission on,
// as by default), kube-controller-manager (every default controller,
// --node-monitor-grace-period 20s, so a stopped kubelet turns its node
// NotReady within about half a minute) and kube-scheduler.
//
// Node i ("node-1", "node-2", ...) has its own network namespace
// (skylbk-node-i) with eth0 = 10.213.0.(10+i) on the host bridge skylbk0,
// which has no uplink; nodes have no default route, and the host's
// ip_forward is left alone. Each node also has its own mount namespace, with
// overlays on /run and /var, so that the paths containerd, runc and the
// kubelet hard-code stay the node's. In it run containerd (Debian's, its own
// root, state and socket), the kubelet (cgroupfs, cgroupRoot skylbk-node-i)
// and kube-proxy (iptables, NodePorts on the node IP). Pods get addresses of
// 10.214.i.0/24 from the CNI bridge plugin (no masquerade: the host routes
// each pod range to its node); portmap serves hostPort. Services are
// 10.215.0.0/16: the kubernetes Service is 10.215.0.1, and the cluster DNS
// (CoreDNS, the image skylb ships, Deployment coredns and Service kube-dns in
// kube-system) is 10.215.0.10, serving cluster.local only (no upstream), so
// pods resolve names like etcd-client.skylb-dns.svc.
//
// The host reaches the node IPs, so NodePorts and hostPorts answer there:
// curl http://10.213.0.11:30080/, dig @10.213.0.11 -p 30053. Pod IPs answer
// from the host too; Service IPs only inside the nodes (ExecInNode).
//
// The host is on the nodes' network. A client from beyond it, whose source
// address a pod should see intact, runs in the network namespace
// skylbk-client that Cluster.Client creates on demand: 10.216.0.2 on the
// bridge, the host and nodes on the link both ways, the pod ranges through
// their nodes.
//
// Storage: a default StorageClass "standard" (no provisioner,
// WaitForFirstConsumer) and PersistentVolumes pv1..pv8 of 10Gi, hostPath
// directories under <Dir>/pv, shared by all nodes.
//
// Images come from tarballs (Options.Images, Import) and are never pulled:
// use the references package test/images builds (skylb, etcd, debian,
// coredns, pause) with imagePullPolicy IfNotPresent, or tags other than
// latest.
//
// # State
//
// Everything Up starts or creates is recorded in <Dir>/cluster.json before
// it is created: processes (by pid and start time), network namespaces, the
// bridge, host routes, cgroups. Down works from that record alone, so it
// removes a cluster after a failed Up, and from another process (Load, or
// scripts/cluster.sh down). Each process logs to <Dir>/logs/<name>.log;
// Down keeps the logs and removes the rest.
//
// # Use
//
//	imgs, err := images.Build(ctx, images.Options{Root: root})
//	c, err := cluster.Up(ctx, cluster.Options{Dir: dir, Bin: root + "/bin", Images: images.Tarballs(imgs)})
//	defer c.Down()
//	out, err := c.Kubectl(ctx, "apply", "-k", root+"/etcd")
//
// Only one cluster runs at a time on a machine: Up fails if the bridge or the
// address ranges are taken.
package cluster
