// Package server is the fake cluster's broker side, a protocol adapter: listeners,
// connections, request dispatch and one file per Kafka API, each registering its handler,
// its failure response and its fault scope (dispatch.go). Handlers decode requests, call the
// packages that hold the protocol logic and encode responses. Cluster-wide state (topics and
// their leaders, the clock, faults) lives on Cluster; each Broker is a node with its own
// listener and node id. Per-concept state lives in sibling packages: config for configs, share
// for share partitions, sessions and the delayed share fetch, group for the group coordinator,
// log for partition logs, fault for injected faults, clock for time, acl for ACLs and the
// authorizer, which handlers consult through authorize.go.
package server
