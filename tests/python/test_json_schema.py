"""test_json_schema.py - generate(json_schema=...) and chat(json_schema=...)
on the build/lm fixtures, which emit garbage unconstrained: for 8 schemas
covering the subset of docs/language-models.md (objects with required and
optional properties, enum and const, arrays with item counts, type lists
with numbers, booleans and null, oneOf, recursive $ref with anyOf, string
lengths, nested objects through definitions with additionalProperties
false), 50 seeded generations at temperature 1 each: every one that an
end-of-generation token ended parses as JSON and validates under the
schema by an independent validator (python3-jsonschema), and max_tokens is
set so that all of them end so (the share is printed; a generation cut by
max_tokens would be a prefix that no validator can judge); a schema
given as JSON text is the same schema; malformed schemas raise
RlxInvalidArgument with the converter's message.

Run: PYTHONPATH=python python3 -m unittest tests/python/test_json_schema.py
"""

import json
import os
import sys
import unittest

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import rlx  # noqa: E402

MODEL = os.path.join(ROOT, "build", "lm", "llama-q4_0.gguf")
SEEDS = 50
MAX_TOKENS = 120

SCHEMAS = {
    "object": {"type": "object", "required": ["name", "age"], "properties": {
        "name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"}, "active": {"type": "boolean"},
        "nick": {"type": ["string", "null"], "maxLength": 4}}},
    "enum_const": {"type": "object", "required": ["colour", "v"], "properties": {
        "colour": {"enum": ["red", "green", "blue"]}, "v": {"const": 1}}},
    "array": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 4},
    "type_list": {"type": ["string", "null", "boolean", "number"], "maxLength": 6},
    "one_of": {"oneOf": [{"type": "integer"},
                         {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}]},
    "recursive_ref": {"$defs": {"node": {"type": "object", "required": ["v"], "properties": {
        "v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}}},
        "$ref": "#/$defs/node"},
    "string_length": {"type": "string", "minLength": 2, "maxLength": 5},
    "nested": {"definitions": {"pt": {"type": "object", "required": ["x", "y"], "additionalProperties": False,
                                      "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}},
               "type": "object", "required": ["a"],
               "properties": {"a": {"$ref": "#/definitions/pt"}, "b": {"$ref": "#/definitions/pt"}}},
}


class JsonSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(MODEL):
            raise unittest.SkipTest("%s is missing: run make lm-fixtures" % MODEL)
        cls.lm = rlx.load_gguf(MODEL, n_ctx=160, threads=1)

    @classmethod
    def tearDownClass(cls):
        cls.lm.close()

    def test_generations_validate(self):
        ended, total = 0, 0
        for name, schema in SCHEMAS.items():
            jsonschema.Draft202012Validator.check_schema(schema)
            for seed in range(SEEDS):
                text, ids, st = self.lm.generate("JSON:", max_tokens=MAX_TOKENS, temperature=1.0, seed=seed,
                                                 json_schema=schema)
                total += 1
                if st["stopped_by"] != "end_of_generation":
                    self.assertEqual(st["stopped_by"], "max_tokens", (name, seed, text))
                    continue
                ended += 1
                try:
                    jsonschema.validate(json.loads(text), schema)
                except (ValueError, jsonschema.ValidationError) as e:
                    self.fail("%s seed %d: %r: %s" % (name, seed, text, e))
        print("\njson_schema: %d of %d generations ended by end-of-generation, all valid" % (ended, total),
              file=sys.stderr)
        self.assertEqual(ended, total)

    def test_text_and_chat(self):
        schema = SCHEMAS["enum_const"]
        a = self.lm.generate("JSON:", max_tokens=MAX_TOKENS, temperature=1.0, seed=3, json_schema=schema)[0]
        b = self.lm.generate("JSON:", max_tokens=MAX_TOKENS, temperature=1.0, seed=3,
                             json_schema=json.dumps(schema))[0]
        self.assertEqual(a, b)
        text, st = self.lm.chat([{"role": "user", "content": "Pick."}], max_tokens=MAX_TOKENS, temperature=1.0,
                                seed=2, json_schema=schema)
        self.assertEqual(st["stopped_by"], "end_of_generation")
        jsonschema.validate(json.loads(text), schema)

    def test_refused(self):
        cases = [
            ({"type": "string", "format": "date"}, "json schema: /format: 'format' is not supported"),
            ({"properties": {"age": {"type": "integer", "minimum": 0}}},
             "json schema: /properties/age/minimum: 'minimum' is not supported"),
            ('{"type": ', "json schema: a value expected at byte 9"),
            ({"$ref": "other.json#/a"}, "json schema: /$ref: only references within the schema"),
            ({"enum": []}, "json schema: /enum: an empty enum admits nothing"),
        ]
        for schema, message in cases:
            with self.assertRaises(rlx.RlxInvalidArgument) as e:
                self.lm.generate("x", json_schema=schema)
            self.assertIn(message, str(e.exception))
        with self.assertRaises(rlx.RlxInvalidArgument) as e:
            self.lm.chat([{"role": "user", "content": "hi"}], json_schema={"type": "decimal"})
        self.assertIn("json schema: /type: unknown type 'decimal'", str(e.exception))
        with self.assertRaises(rlx.RlxInvalidArgument) as e:
            self.lm.generate("x", grammar='root ::= "a"', json_schema={})
        self.assertIn("LanguageModel.generate: give one of grammar, json_schema", str(e.exception))
        with self.assertRaises(rlx.RlxInvalidArgument) as e:
            self.lm.generate("x", json_schema=3)
        self.assertIn("json_schema must be a dict, a bool or JSON text (got int)", str(e.exception))


if __name__ == "__main__":
    unittest.main()
