module github.com/kshare/kshare/examples/observability

go 1.26.0

replace (
	github.com/kshare/kshare => ../..
	github.com/kshare/kshare/shareconsumer/kshareotel => ../../shareconsumer/kshareotel
	github.com/kshare/kshare/shareconsumer/kshareprom => ../../shareconsumer/kshareprom
)
