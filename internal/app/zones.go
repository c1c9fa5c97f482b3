package app

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/dnsprobe"
	"github.com/skylb/skylb/internal/kubeclient"
)

// The reasons of the Events that tell whether CoreDNS serves a zone.
const (
	reasonZoneNotServed = "ZoneNotServed"
	reasonZoneServed    = "ZoneServed"
)

// zoneChecker returns the checker of the zones CoreDNS serves, which reports
// to a zoneReporter, or nil without cfg.CoreDNSAddress or with cfg.Once.
func zoneChecker(cfg Config, kube kubeclient.Interface, recorder record.EventRecorder) *dnsprobe.Checker {
	if cfg.CoreDNSAddress == "" || cfg.Once {
		return nil
	}
	r := newZoneReporter(cfg, kube, recorder)
	return dnsprobe.New(dnsprobe.Config{
		Address: cfg.CoreDNSAddress,
		Zones:   dnsname.WithReverse(cfg.Controller.Source.Zones, cfg.Controller.ReverseZones),
		Report:  r.report,
		Log:     r.log,
	})
}

// newZoneReporter returns the zoneReporter of cfg.
func newZoneReporter(cfg Config, kube kubeclient.Interface, recorder record.EventRecorder) *zoneReporter {
	r := &zoneReporter{
		address: cfg.CoreDNSAddress,
		reverse: map[string]bool{},
		log:     cfg.Log.WithField("component", "zones"),
	}
	for _, z := range cfg.Controller.ReverseZones {
		r.reverse[z.Name] = true
	}
	// The Events go on skylb's leader-election Lease, the object that
	// stands for skylb in its namespace. Without leader election there is
	// none, and the log line and skylb_zone_served tell alone; a dry run
	// sends no Events either. Every replica sends them: each asks CoreDNS
	// itself, and a mismatch is found at start, before any replica leads.
	if cfg.LeaderElect && !cfg.Controller.DryRun {
		r.recorder, r.kube = recorder, kube
		r.lease = &corev1.ObjectReference{Kind: "Lease", APIVersion: coordinationv1.SchemeGroupVersion.String(),
			Namespace: cfg.Leader.Namespace, Name: cfg.Leader.Name}
	}
	return r
}

// zoneReporter tells of a zone that CoreDNS stops or starts serving: a log
// line, and an Event on skylb's Lease.
type zoneReporter struct {
	address string
	reverse map[string]bool // the zones of --reverse-zone
	log     logrus.FieldLogger

	// recorder, when set, sends the Events on lease, whose UID is read
	// through kube.
	recorder record.EventRecorder
	kube     kubeclient.Interface
	lease    *corev1.ObjectReference
}

// report logs c, and sends an Event when a zone is found not served, and
// when it is served again.
func (r *zoneReporter) report(ctx context.Context, c dnsprobe.Change) {
	log := r.log.WithFields(logrus.Fields{"zone": c.Zone, "address": r.address, "answer": c.Answer})
	switch {
	case c.State == dnsprobe.NotServed:
		flag := "--zone"
		if r.reverse[c.Zone] {
			flag = "--reverse-zone"
		}
		msg := fmt.Sprintf("CoreDNS at %s does not serve zone %s (%s): its Corefile's zones differ from %s; records of %s are published but not answered",
			r.address, c.Zone, c.Answer, flag, c.Zone)
		log.Warn(msg)
		r.event(ctx, corev1.EventTypeWarning, reasonZoneNotServed, msg)
	case c.State == dnsprobe.Served && c.Prev == dnsprobe.NotServed:
		msg := fmt.Sprintf("CoreDNS at %s serves zone %s again", r.address, c.Zone)
		log.Info(msg)
		r.event(ctx, corev1.EventTypeNormal, reasonZoneServed, msg)
	case c.State == dnsprobe.Served:
		log.Info(fmt.Sprintf("CoreDNS at %s serves zone %s", r.address, c.Zone))
	default:
		log.Warn(fmt.Sprintf("cannot tell whether CoreDNS at %s serves zone %s (%s): no answer that tells since the start; asking again every %v",
			r.address, c.Zone, c.Answer, dnsprobe.DefaultInterval))
	}
}

// event sends an Event on the Lease, with its UID when it can be read: with
// it, kubectl describe lease shows the Event. On a first start the Lease
// may not exist yet.
func (r *zoneReporter) event(ctx context.Context, eventtype, reason, message string) {
	if r.recorder == nil {
		return
	}
	ref := r.lease.DeepCopy()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease := &coordinationv1.Lease{}
	if err := r.kube.Get(ctx, kubeclient.Leases, ref.Namespace, ref.Name, lease); err == nil {
		ref.UID = lease.UID
	}
	r.recorder.Event(ref, eventtype, reason, message)
}

// zoneServedValue is the value of skylb_zone_served for s.
func zoneServedValue(s dnsprobe.State) float64 {
	switch s {
	case dnsprobe.Served:
		return 1
	case dnsprobe.NotServed:
		return 0
	}
	return -1
}
