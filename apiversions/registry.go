package apiversions

import "sync"

// Registry holds the Versions of each broker, by node id. The zero value is empty and ready to
// use; a Registry is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	nodes map[int32]Versions
}

// Set records the versions of node, replacing what was known.
func (r *Registry) Set(node int32, v Versions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes == nil {
		r.nodes = make(map[int32]Versions)
	}
	r.nodes[node] = v
}

// Get returns the versions of node, and false when none are recorded: the caller must ask the
// broker (or treat the node as unknown) rather than assume it supports nothing.
func (r *Registry) Get(node int32) (Versions, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.nodes[node]
	return v, ok
}

// Delete forgets the versions of node, for example when kgo reconnects to it or it leaves the
// cluster.
func (r *Registry) Delete(node int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.nodes, node)
}
