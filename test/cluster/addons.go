package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PersistentVolumes is the number of hostPath PersistentVolumes Up creates
// in the default StorageClass "standard" (every node shares the host's
// filesystem, so any volume works on any node).
const PersistentVolumes = 8

// PersistentVolumeSize is the capacity of each of them.
const PersistentVolumeSize = "10Gi"

// applyStorage creates the default StorageClass and the PersistentVolumes,
// whose directories are <Dir>/pv/pvN (mode 0777: hostPath ignores fsGroup).
func (c *Cluster) applyStorage(ctx context.Context) error {
	var docs []string
	docs = append(docs, `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Retain
`)
	for i := 1; i <= PersistentVolumes; i++ {
		dir := filepath.Join(c.Dir, "pv", fmt.Sprintf("pv%d", i))
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: pv%d}
spec:
  capacity: {storage: %s}
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: %s, type: Directory}
`, i, PersistentVolumeSize, dir))
	}
	return c.Apply(ctx, strings.Join(docs, "---\n"))
}

// applyDNS creates the cluster DNS: CoreDNS (image) in kube-system, behind
// the Service kube-dns at DNSIP, serving the cluster domain and nothing
// else (there is no upstream). It runs as the restricted Pod Security
// Standard asks, on port 1053.
func (c *Cluster) applyDNS(ctx context.Context, image string) error {
	return c.Apply(ctx, fmt.Sprintf(clusterDNS, image, dnsIP, clusterDomain))
}

// clusterDNS are the cluster DNS objects. Arguments: image, Service IP,
// cluster domain.
const clusterDNS = `apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects:
- {kind: ServiceAccount, name: coredns, namespace: kube-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:1053 {
        errors
        health :8080
        ready :8181
        kubernetes %[3]s in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
        }
        cache 5
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 2
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {k8s-app: kube-dns}}
      containers:
      - name: coredns
        image: %[1]s
        imagePullPolicy: IfNotPresent
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 1053, protocol: UDP}
        - {name: dns-tcp, containerPort: 1053, protocol: TCP}
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
          periodSeconds: 2
        livenessProbe:
          httpGet: {path: /health, port: 8080}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        volumeMounts:
        - {name: config, mountPath: /etc/coredns, readOnly: true}
      volumes:
      - name: config
        configMap: {name: coredns}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: %[2]s
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, targetPort: 1053, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 1053, protocol: TCP}
`
