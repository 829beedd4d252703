module github.com/idgen/idgen/libs/routes

go 1.26.0

require golang.org/x/net v0.60.0

require golang.org/x/text v0.42.0 // indirect
