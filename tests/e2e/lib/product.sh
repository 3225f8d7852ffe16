# lib/product.sh — sourced by the e2e tests that run cohere-transcribe on the
# project's tiny product model: the binary, the model and the Silero weights
# (tests/setup fetches them into $CT_TESTDATA), and a scratch folder $tmp
# removed when the test exits.
bin="$CT_BIN/cohere-transcribe"
model="$CT_FIXTURES/tiny-product"
weights="$CT_TESTDATA/silero/silero_vad.onnx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
