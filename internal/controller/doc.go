// Package controller watches the objects that publish names (Services,
// Ingresses, and the Gateway API's Gateways and routes and external-dns's
// DNSEndpoints once their CRDs are served: one entry each in kindsOf) and
// keeps the publisher's desired records equal to what they ask for.
//
// Informer event handlers only enqueue object keys (skydns.ObjectKey). A
// worker syncs a key: sync computes the object's publication from the
// listers, updates the ranking index, resolves the groups of names that may
// have changed and returns its decision as an outcome (records, Events,
// health targets, Service status, keys to sync again); apply alone carries
// an outcome out, handing records to the publisher in the order they were
// decided. Nothing is handed over as complete before the caches have synced.
package controller
