// What a Node.js consumer of the contract does: compile every exported JSON Schema with Ajv in
// strict mode, declaring only the keywords `keywords.json` lists, then validate Kafka message
// values against message.json.
//
//   NODE_PATH=.tools/js/node_modules node tests/js/ajv_strict.cjs schemas/json \
//     [--valid messages.jsonl] [--invalid messages.jsonl]
//
// Each line of --valid must be accepted and each line of --invalid refused. Exit 1 on anything
// else: a keyword strict mode does not know, a schema that does not compile, a wrong verdict.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { parseArgs } = require("node:util");
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;

const KEYWORDS = "keywords.json";
const MESSAGE = "urn:centrality:message";

function schemaFiles(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return schemaFiles(file);
      return entry.name.endsWith(".json") ? [file] : [];
    })
    .sort();
}

function lines(file) {
  if (!file) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line));
}

function main() {
  const { values, positionals } = parseArgs({
    options: { valid: { type: "string" }, invalid: { type: "string" } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) {
    throw new Error("usage: ajv_strict.cjs SCHEMA_DIR [--valid FILE] [--invalid FILE]");
  }
  const dir = positionals[0];

  // strict: true throws on unknown keywords and formats, ignored keywords, and loose types.
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv); // uuid and date-time, and the formatMinimum keyword
  const keywords = JSON.parse(fs.readFileSync(path.join(dir, KEYWORDS), "utf8"));
  for (const [keyword, metaSchema] of Object.entries(keywords)) {
    ajv.addKeyword({ keyword, metaSchema });
  }

  const files = schemaFiles(dir).filter((file) => path.basename(file) !== KEYWORDS);
  const schemas = files.map((file) => [file, JSON.parse(fs.readFileSync(file, "utf8"))]);
  for (const [, schema] of schemas) ajv.addSchema(schema);
  const failures = [];
  for (const [file, schema] of schemas) {
    try {
      ajv.getSchema(schema.$id);
    } catch (error) {
      failures.push(`${path.relative(dir, file)}: ${error.message}`);
    }
  }
  if (failures.length) return report(failures);

  const message = ajv.getSchema(MESSAGE);
  const verdicts = [
    ...lines(values.valid).map((doc) => [doc, true]),
    ...lines(values.invalid).map((doc) => [doc, false]),
  ];
  for (const [doc, expected] of verdicts) {
    if (message(doc) !== expected) {
      const what = JSON.stringify(doc).slice(0, 200);
      const why = expected ? `: ${explain(ajv, doc, message)}` : "";
      failures.push(`${expected ? "refused" : "accepted"} ${what}${why}`);
    }
  }
  if (failures.length) return report(failures);
  const declared = Object.keys(keywords).join(", ");
  console.log(
    `ajv strict: ${files.length} schemas compiled (declared: ${declared}); ` +
      `${verdicts.length} messages judged as expected`,
  );
}

// message.json's oneOf reports every event type's complaint: an event's own schema says more.
function explain(ajv, doc, message) {
  const own = doc && !Array.isArray(doc) && ajv.getSchema(`urn:centrality:event:${doc.type}`);
  if (own && !own(doc)) return ajv.errorsText(own.errors);
  return ajv.errorsText(message.errors);
}

function report(failures) {
  for (const failure of failures) console.error(failure);
  process.exitCode = 1;
}

main();
