module github.com/idgen/idgen/tools/release

go 1.26.0

require golang.org/x/mod v0.42.0

replace github.com/idgen/idgen/libs/testenv => ../../libs/testenv
