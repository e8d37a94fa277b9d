module github.com/kshare/kshare/shareconsumer/kshareprom

go 1.26.0

replace github.com/kshare/kshare => ../..

require (
	github.com/kshare/kshare v0.0.0-00010101000000-000000000000 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
)
