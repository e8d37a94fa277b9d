// Package server is the fake cluster's broker side: listeners, connections, request dispatch and
// one handler per Kafka API. Cluster-wide state (topics, configs, the clock, faults) lives on
// Cluster; each Broker is a node with its own listener and node id. Per-concept state lives in
// sibling packages (log for partition logs, fault for injected faults, clock for time).
package server
