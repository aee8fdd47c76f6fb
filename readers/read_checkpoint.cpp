// sg2 readers: the readers' entry point (read_checkpoint.h).
#include "readers/read_checkpoint.h"

#include "readers/checkpoint.h"
#include "readers/families.h"
#include "sg2/error.h"
#include "util/file_util.h"

namespace sg2::readers {

ConvertResult read_checkpoint_memory(const uint8_t* data, size_t size, const std::string& name) {
  auto ck = open_checkpoint(data, size, name);
  Conversion conv = detect_and_convert(*ck);
  ConvertResult res;
  ConvertReport& rep = res.report;
  rep.source_file = name;
  rep.file_size = size;
  rep.container = container_name(ck->container);
  rep.pickle_protocol = ck->pickle_protocol;
  rep.family = conv.family;
  rep.generator = conv.generator;
  rep.stored_dtypes = conv.stored_dtypes;
  rep.notes = conv.notes;
  rep.warnings = conv.warnings;
  rep.config_warnings = conv.config_warnings;
  rep.source_sha256 = detail::sha256_hex(data, size);
  rep.w_avg_missing = conv.w_avg_missing;
  ck.reset();  // release the parse
  Model& m = res.model = std::move(conv.model);
  check_converted(m, name);
  rep.w_avg_finite = rep.w_avg_missing || w_avg_finite(m);
  m.provenance.source_file = detail::base_name(name);
  m.provenance.source_sha256 = rep.source_sha256;
  m.provenance.source_family = conv.family;
  m.provenance.converter = std::string("sg2 ") + version();
  return res;
}

ConvertResult read_checkpoint_file(const std::string& path) {
  detail::MappedFile file(path);
  return read_checkpoint_memory(file.data(), file.size(), path);
}

}  // namespace sg2::readers
