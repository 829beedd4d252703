module github.com/idgen/idgen/tools/release

go 1.26.0

require (
	github.com/idgen/idgen/libs/testenv v0.1.0
	golang.org/x/mod v0.42.0
)

replace github.com/idgen/idgen/libs/testenv => ../../libs/testenv
