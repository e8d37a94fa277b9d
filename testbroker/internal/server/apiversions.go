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
	return resp
}

func failedApiVersions(r *kmsg.ApiVersionsRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ErrorCode = code
	return resp
}
