// Package apiversions records what each broker supports, from its ApiVersions response, and
// answers the consumer's version questions without a network call: which version of an API to
// use, and whether a partition's leader can take a Renew acknowledgement (ShareFetch and
// ShareAcknowledge v2, Kafka 4.2), a record-limit fetch (ShareFetch v2) or share groups at all.
//
// # How the consumer fills the Registry
//
// The consumer sends its requests through a kgo.Client. kgo negotiates versions per connection:
// each new connection starts with an ApiVersions request, and every request then goes out at the
// highest version that the request type (kmsg), the client's kgo.MaxVersions (kversion.Stable()
// unless set) and the broker all support. kgo keeps what it learned to itself, so the consumer
// asks each broker once more:
//
//	req := kmsg.NewPtrApiVersionsRequest()
//	req.ClientSoftwareName, req.ClientSoftwareVersion = "kshare", version
//	resp, err := client.Broker(int(nodeID)).Request(ctx, req)
//	v, err := apiversions.FromResponse(resp.(*kmsg.ApiVersionsResponse))
//	caps, _ := client.OptValue(kgo.MaxVersions).(*kversion.Versions)
//	registry.Set(nodeID, v.Cap(caps))
//
// Broker(id).Request sends the request to that broker and no other (Client.Request would pick any
// broker), loading metadata first if the node is not known yet. Unlike Client.Request, it does not
// fill in the client software name and version, which brokers require from ApiVersions v3 on. kgo
// chooses the ApiVersions version itself. Cap narrows the broker's ranges to what the client will
// send, so that a gate answers for the version kgo will actually use.
//
// An entry is kept until the broker may have changed: the consumer drops it when kgo reports a
// new connection to that node (a kgo.HookBrokerConnect; a broker upgraded or downgraded in place
// restarts, so every client reconnects) or when the node leaves the cluster metadata, and asks
// again before it next needs an answer for that node.
package apiversions
