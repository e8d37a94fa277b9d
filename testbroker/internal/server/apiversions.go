package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(18, 0, 4, (*Broker).handleApiVersions, failedApiVersions, noScope)
}

// handleApiVersions lists every implemented API with its version range after caps, in key
// order. A version the cluster does not accept is answered before parsing (Broker.handle).
func (b *Broker) handleApiVersions(_ *conn, req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = req.Version
	keys := make([]int16, 0, len(apis))
	for k := range apis {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		min, max, ok := b.c.versionRange(k)
		if !ok {
			continue
		}
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: min, MaxVersion: max})
	}
	if req.Version >= 3 {
		// transaction.version 2 (KIP-890), finalized as a Kafka 4.x cluster does by default:
		// clients that see it run transactions with TV2.
		resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{{Name: "transaction.version", MinVersion: 0, MaxVersion: 2}}
		resp.FinalizedFeaturesEpoch = 1
		resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{{Name: "transaction.version", MinVersionLevel: 2, MaxVersionLevel: 2}}
	}
	return resp
}

func failedApiVersions(r *kmsg.ApiVersionsRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ErrorCode = code
	return resp
}
