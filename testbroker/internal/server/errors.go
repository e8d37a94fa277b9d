package server

import "github.com/kshare/kshare/testbroker/internal/kafkaerr"

// codeOf and messageOf fill a response's error code and message fields from an error.
var (
	codeOf    = kafkaerr.CodeOf
	messageOf = kafkaerr.MessageOf
)
