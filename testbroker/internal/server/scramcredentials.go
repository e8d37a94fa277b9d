package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
	"github.com/kshare/kshare/testbroker/internal/sasl"
)

func init() {
	register(50, 0, 0, (*Broker).handleDescribeUserSCRAMCredentials, failedDescribeUserSCRAMCredentials, noScope)
	register(51, 0, 0, (*Broker).handleAlterUserSCRAMCredentials, failedAlterUserSCRAMCredentials, noScope)
}

// The iteration bounds ScramControlManager enforces: ScramMechanism's minimum for both hashes,
// and its MAX_ITERATIONS.
const (
	minScramIterations = 4096
	maxScramIterations = 16384
)

// scramMechanism is the mechanism of a ScramMechanism type byte (1 SCRAM-SHA-256,
// 2 SCRAM-SHA-512), "" for UNKNOWN.
func scramMechanism(typ int8) string {
	switch typ {
	case 1:
		return sasl.ScramSHA256
	case 2:
		return sasl.ScramSHA512
	}
	return ""
}

func scramType(mechanism string) int8 {
	if mechanism == sasl.ScramSHA512 {
		return 2
	}
	return 1
}

// validateScramUser is ScramControlManager.validateScramUsernameAndMechanism.
func validateScramUser(user string, typ int8) error {
	if user == "" {
		return kafkaerr.New(kerr.UnacceptableCredential, "Username must not be empty")
	}
	if scramMechanism(typ) == "" {
		return kafkaerr.New(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	return nil
}

// reservedUser refuses an upsertion for sasl.InterBrokerUser, beyond Kafka: the replica
// fetchers' credential is not among those the request manages (a deletion of it is not found),
// and an admin's credential under that name could never authenticate.
const reservedUser = "Username " + sasl.InterBrokerUser + " is reserved for the cluster's replica fetchers"

// handleAlterUserSCRAMCredentials is ScramControlManager.alterCredentials: every deletion then
// every upsertion is checked against the credentials as they were before the request; a user
// named twice in one request fails with DUPLICATE_RESOURCE, and the changes that pass apply
// together. Results list the deletions, then the upsertions, then the failures.
func (b *Broker) handleAlterUserSCRAMCredentials(cn *conn, req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	if !cn.authorizeCluster(acl.OpAlter) {
		// ControllerApis throws ClusterAuthorizationException, whose message names Kafka's
		// request object; the code goes alone, as for the other cluster refusals.
		return failedAlterUserSCRAMCredentials(req, kerr.ClusterAuthorizationFailed.Code)
	}
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	store := b.c.scram
	const twice = "A user credential cannot be altered twice in the same request"
	var (
		deletions  []kmsg.AlterUserSCRAMCredentialsRequestDeletion
		upsertions []kmsg.AlterUserSCRAMCredentialsRequestUpsertion
		failed     []string
		errs       = map[string]error{}
	)
	fail := func(user string, e error) {
		errs[user] = e
		failed = append(failed, user)
	}
	removeDeletion := func(user string) bool {
		for i, d := range deletions {
			if d.Name == user {
				deletions = append(deletions[:i], deletions[i+1:]...)
				return true
			}
		}
		return false
	}
	removeUpsertion := func(user string) bool {
		for i, u := range upsertions {
			if u.Name == user {
				upsertions = append(upsertions[:i], upsertions[i+1:]...)
				return true
			}
		}
		return false
	}
	for _, d := range req.Deletions {
		if errs[d.Name] != nil {
			continue
		}
		switch {
		case removeDeletion(d.Name):
			fail(d.Name, kafkaerr.New(kerr.DuplicateResource, "%s", twice))
		case validateScramUser(d.Name, d.Mechanism) != nil:
			fail(d.Name, validateScramUser(d.Name, d.Mechanism))
		case !store.HasScram(d.Name, scramMechanism(d.Mechanism)):
			fail(d.Name, kafkaerr.New(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"))
		default:
			deletions = append(deletions, d)
		}
	}
	for _, u := range req.Upsertions {
		if errs[u.Name] != nil {
			continue
		}
		// A user is in at most one of the two lists: a user both deleted and upserted is
		// dropped from the deletions.
		if removeDeletion(u.Name) || removeUpsertion(u.Name) {
			fail(u.Name, kafkaerr.New(kerr.DuplicateResource, "%s", twice))
			continue
		}
		if e := validateScramUser(u.Name, u.Mechanism); e != nil {
			fail(u.Name, e)
			continue
		}
		switch {
		case u.Name == sasl.InterBrokerUser:
			fail(u.Name, kafkaerr.New(kerr.UnacceptableCredential, "%s", reservedUser))
		case u.Iterations < minScramIterations:
			fail(u.Name, kafkaerr.New(kerr.UnacceptableCredential, "Too few iterations"))
		case u.Iterations > maxScramIterations:
			fail(u.Name, kafkaerr.New(kerr.UnacceptableCredential, "Too many iterations"))
		default:
			upsertions = append(upsertions, u)
		}
	}
	ok := func(user string) {
		resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: user})
	}
	for _, d := range deletions {
		store.DeleteScram(d.Name, scramMechanism(d.Mechanism))
		ok(d.Name)
	}
	for _, u := range upsertions {
		store.SetScram(u.Name, scramMechanism(u.Mechanism), u.Salt, u.SaltedPassword, int(u.Iterations))
		ok(u.Name)
	}
	for _, user := range failed {
		e := errs[user]
		resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: user, ErrorCode: codeOf(e), ErrorMessage: messageOf(e)})
	}
	return resp
}

// failedAlterUserSCRAMCredentials answers every user the request names, once each and sorted,
// with code, as AlterUserScramCredentialsRequest.getErrorResponse does.
func failedAlterUserSCRAMCredentials(r *kmsg.AlterUserSCRAMCredentialsRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var users []string
	for _, d := range r.Deletions {
		users = append(users, d.Name)
	}
	for _, u := range r.Upsertions {
		users = append(users, u.Name)
	}
	slices.Sort(users)
	for _, user := range slices.Compact(users) {
		resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: user, ErrorCode: code})
	}
	return resp
}

// handleDescribeUserSCRAMCredentials is ScramImage.describe: every user with a credential when
// the request names none (null or empty), else each named user once, with DUPLICATE_RESOURCE
// for a user named twice and RESOURCE_NOT_FOUND for one without a credential.
func (b *Broker) handleDescribeUserSCRAMCredentials(cn *conn, req *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	if !cn.authorizeCluster(acl.OpDescribe) {
		resp := failedDescribeUserSCRAMCredentials(req, kerr.ClusterAuthorizationFailed.Code).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		msg := msgClusterAuthorizationFailed
		resp.ErrorMessage = &msg
		for i := range resp.Results {
			resp.Results[i].ErrorMessage = &msg
		}
		return resp
	}
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	store := b.c.scram
	var users []string
	dup := map[string]bool{}
	if len(req.Users) == 0 {
		users = store.ScramUsers()
	} else {
		seen := map[string]bool{}
		for _, u := range req.Users {
			if seen[u.Name] {
				dup[u.Name] = true
				continue
			}
			seen[u.Name] = true
			users = append(users, u.Name)
		}
	}
	for _, user := range users {
		r := kmsg.DescribeUserSCRAMCredentialsResponseResult{User: user}
		iterations := store.ScramIterations(user)
		switch {
		case dup[user]:
			r.ErrorCode = kerr.DuplicateResource.Code
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + user
			r.ErrorMessage = &msg
		case len(iterations) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			msg := "Attempt to describe a user credential that does not exist: " + user
			r.ErrorMessage = &msg
		default:
			for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
				if n, ok := iterations[m]; ok {
					r.CredentialInfos = append(r.CredentialInfos, kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{
						Mechanism: scramType(m), Iterations: int32(n),
					})
				}
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// failedDescribeUserSCRAMCredentials answers with code at the top and one result per user the
// request names, as DescribeUserScramCredentialsRequest.getErrorResponse does, which leaves
// the results' user names empty.
func failedDescribeUserSCRAMCredentials(r *kmsg.DescribeUserSCRAMCredentialsRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.ErrorCode = code
	for range r.Users {
		resp.Results = append(resp.Results, kmsg.DescribeUserSCRAMCredentialsResponseResult{ErrorCode: code})
	}
	return resp
}
