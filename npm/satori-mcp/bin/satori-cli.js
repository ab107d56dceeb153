#!/usr/bin/env node
// The `satori-cli` command: the shell client of this platform's package.
"use strict";

require("../lib/launch").launch("satori-cli");
