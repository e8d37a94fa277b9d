package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleApiVersions(req *kmsg.ApiVersionsRequest) kmsg.Response {
	return b.apiVersionsResponse(req.Version)
}

// apiVersionsResponse lists every implemented API with its version range after caps, in key order.
func (b *Broker) apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
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
