// Package server is the fake cluster's broker side, a protocol adapter: listeners,
// connections, SASL on each connection, request dispatch and one file per Kafka API, each
// registering its handler, its failure response and its fault scope (dispatch.go). Handlers
// decode requests, ask authorize.go whether the connection's principal may act, call the
// packages that hold the protocol logic and encode responses.
//
// Cluster ties the nodes together; each Broker is a node with its own listener and node id.
// The state and the rules live in sibling packages: metadata for the topic registry, topic
// validation, replica placement and leader moves (Kafka's controller); replica for the
// partitions' replicas, follower fetching and the delayed fetch with its KIP-1166 completion
// rule (Manager.Fetch); log for partition logs; share for share partitions, share sessions and
// the delayed share fetch; group for the group coordinator; config for configs; acl for ACLs
// and the authorizer; sasl for mechanisms and credentials; txn for transactions; fault for
// injected faults; clock for time. Every refusal arrives as a kafkaerr.Error, whose Message is
// what the response carries in its error message field.
package server
