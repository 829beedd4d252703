module github.com/idgen/idgen/tools/vulncheck

go 1.26.0
