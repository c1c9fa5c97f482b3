// Package controller watches Services and Ingresses and keeps the publisher's
// desired records equal to what they ask for.
//
// Informer event handlers only enqueue object keys. A worker computes the
// object's publication from the listers, updates the claim index, resolves the
// groups of names that may have changed and hands their records to the publisher.
// Nothing is handed over as complete before the caches have synced.
package controller
