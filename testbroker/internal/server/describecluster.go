package server

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
)

func init() {
	register(60, 0, 2, (*Broker).handleDescribeCluster, failedDescribeCluster, noScope)
}

// handleDescribeCluster describes the cluster to an admin client: the running brokers (a
// stopped one counts as fenced, listed with IsFenced only when v2's IncludeFencedBrokers asks),
// the controller (the lowest running broker) and the cluster id. From v1 the request names the endpoint type it
// expects: brokers (1) are served, controllers (2) get MISMATCHED_ENDPOINT_TYPE and anything
// else UNSUPPORTED_ENDPOINT_TYPE, with Kafka's messages. The cluster's authorized operations
// are Integer.MIN_VALUE unless asked for, and then clusterAuthorizedOperations.
func (b *Broker) handleDescribeCluster(cn *conn, req *kmsg.DescribeClusterRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 && req.EndpointType != 1 {
		code, msg := kerr.UnsupportedEndpointType, "Unsupported endpoint type "+strconv.Itoa(int(req.EndpointType))
		if req.EndpointType == 2 {
			code, msg = kerr.MismatchedEndpointType, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		}
		resp.ErrorCode = code.Code
		resp.ErrorMessage = &msg
		return resp
	}
	resp.ClusterID = c.clusterID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = cn.clusterAuthorizedOperations()
	}
	resp.ControllerID = b.c.controllerID()
	// A stopped broker is a fenced one: listed, as fenced, only when v2's
	// IncludeFencedBrokers asks for fenced brokers.
	for _, br := range c.brokers {
		fenced := !c.alive(br.id)
		if fenced && !req.IncludeFencedBrokers {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack, rb.IsFenced = br.id, br.host, br.port, c.rack(br.id), fenced
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp
}

func failedDescribeCluster(r *kmsg.DescribeClusterRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ErrorCode = code
	return resp
}

// clusterAuthorizedOperations is the cluster's authorized-operations bit field that Metadata
// (v8-10) and DescribeCluster answer when asked: 0 unless the principal may DESCRIBE the
// cluster, as AuthHelper.computeDescribeClusterResponse and handleTopicMetadataRequest answer.
func (cn *conn) clusterAuthorizedOperations() int32 {
	ops := cn.authorizedOperations(acl.ResourceCluster, acl.ClusterName)
	if ops&(1<<acl.OpDescribe) == 0 {
		return 0
	}
	return ops
}
