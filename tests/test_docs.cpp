// The documentation kept honest (issue 21 item 6): README.md is a short front door (at most 300 lines)
// whose reference lives in docs/*.md; every relative link and image of those pages points to a file that
// exists (and, for a link into a Markdown page, to one of its headings); every --outdir of a command
// they show writes under out/ (the tour's folders, which .gitignore keeps out of the tree); and
// docs/embedding.md shows apps/examples/* exactly as CI builds them (scripts/test_install.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "test_cli_run.h"

using namespace sg2::test;
namespace fs = std::filesystem;

namespace {

/// README.md and every docs/*.md, as paths relative to the source tree, sorted.
std::vector<std::string> doc_pages() {
  std::vector<std::string> pages = {"README.md"};
  for (const auto& e : fs::directory_iterator(source_path("docs")))
    if (e.is_regular_file() && e.path().extension() == ".md") pages.push_back("docs/" + e.path().filename().string());
  std::sort(pages.begin() + 1, pages.end());
  return pages;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

bool is_fence(const std::string& line) {
  const size_t i = line.find_first_not_of(' ');
  return i != std::string::npos && line.compare(i, 3, "```") == 0;
}

/// A line with its inline code spans (`...`) blanked, so that a link shown as code is not a link.
std::string without_code_spans(const std::string& line) {
  std::string out = line;
  size_t i = 0;
  while ((i = out.find('`', i)) != std::string::npos) {
    const size_t j = out.find('`', i + 1);
    if (j == std::string::npos) break;
    std::fill(out.begin() + static_cast<long>(i), out.begin() + static_cast<long>(j) + 1, ' ');
    i = j + 1;
  }
  return out;
}

/// GitHub's anchor of a heading: lower case, punctuation dropped (also any non-ASCII byte, as the
/// pages' headings use non-ASCII only for dashes), blanks turned into '-'.
std::string slug(const std::string& heading) {
  std::string s;
  for (unsigned char ch : heading) {
    if (std::isalnum(ch)) {
      s += static_cast<char>(std::tolower(ch));
    } else if (ch == ' ') {
      s += '-';
    } else if (ch == '-' || ch == '_') {
      s += static_cast<char>(ch);
    }
  }
  return s;
}

/// The anchors of a Markdown page's headings (outside code blocks); a repeated one gets -1, -2, ...
std::set<std::string> anchors_of(const std::string& text) {
  std::set<std::string> out;
  std::map<std::string, int> seen;
  bool code = false;
  for (const std::string& line : lines_of(text)) {
    if (is_fence(line)) code = !code;
    if (code || line.empty() || line[0] != '#') continue;
    const size_t start = line.find_first_not_of('#');
    if (start == std::string::npos || line[start] != ' ') continue;
    std::string h = line.substr(start + 1);
    while (!h.empty() && (h.back() == '#' || h.back() == ' ')) h.pop_back();
    const std::string a = slug(h);
    const int n = seen[a]++;
    out.insert(n == 0 ? a : a + "-" + std::to_string(n));
  }
  return out;
}

struct Link {
  int line = 0;
  std::string target;
};

/// Every inline link and image target of a page, outside code blocks and code spans.
std::vector<Link> links_of(const std::string& text) {
  std::vector<Link> out;
  static const std::regex link(R"(\]\(([^()\s]+)(\s+"[^"]*")?\))");
  bool code = false;
  int n = 0;
  for (const std::string& raw : lines_of(text)) {
    ++n;
    if (is_fence(raw)) code = !code;
    if (code) continue;
    const std::string line = without_code_spans(raw);
    for (std::sregex_iterator it(line.begin(), line.end(), link), end; it != end; ++it) out.push_back({n, (*it)[1]});
  }
  return out;
}

/// Problems with one link of `page` (a path relative to the source tree); empty when it is good.
std::string check_link(const std::string& page, const std::string& target) {
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target.rfind("mailto:", 0) == 0) return "";
  if (target[0] == '/') return "an absolute path (links must be relative to the page)";
  const size_t hash = target.find('#');
  const std::string file = target.substr(0, hash);
  const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
  const fs::path dir = fs::path(page).parent_path();
  const std::string rel = file.empty() ? page : (dir / file).lexically_normal().string();
  if (rel.rfind("..", 0) == 0) return "points outside the repository";
  if (!fs::exists(source_path(rel))) return rel + " does not exist";
  if (!anchor.empty()) {
    if (fs::path(rel).extension() != ".md") return "an anchor into " + rel + ", which is not a Markdown page";
    if (anchors_of(slurp(source_path(rel))).count(anchor) == 0) return rel + " has no heading #" + anchor;
  }
  return "";
}

}  // namespace

TEST(Docs, TheReadmeIsAFrontDoorOfAtMost300Lines) {
  const std::vector<std::string> lines = lines_of(slurp(source_path("README.md")));
  EXPECT_LE(lines.size(), 300u) << "README.md has " << lines.size()
                                << " lines: move the reference into a page of docs/ and link it";
  EXPECT_GE(lines.size(), 60u) << "README.md is shorter than a front door";
}

TEST(Docs, TheReadmeLinksEveryPage) {
  const std::string readme = slurp(source_path("README.md"));
  std::set<std::string> linked;
  for (const Link& l : links_of(readme)) linked.insert(l.target.substr(0, l.target.find('#')));
  for (const std::string& page : doc_pages()) {
    if (page != "README.md") {
      EXPECT_EQ(linked.count(page), 1u) << "README.md does not link " << page;
    }
  }
  for (const char* f : {"LICENSE", "NOTICE"}) EXPECT_EQ(linked.count(f), 1u) << "README.md does not link " << f;
}

TEST(Docs, EveryRelativeLinkPointsToAFileAndHeading) {
  int checked = 0;
  for (const std::string& page : doc_pages()) {
    for (const Link& l : links_of(slurp(source_path(page)))) {
      ++checked;
      const std::string problem = check_link(page, l.target);
      EXPECT_EQ(problem, "") << page << ":" << l.line << ": (" << l.target << ")";
    }
  }
  EXPECT_GE(checked, 50);
}

TEST(Docs, TheLinkCheckFindsBrokenLinks) {  // the check above can fail
  EXPECT_NE(check_link("README.md", "docs/no-such-page.md"), "");
  EXPECT_NE(check_link("README.md", "docs/cli.md#no-such-heading"), "");
  EXPECT_NE(check_link("docs/cli.md", "images/no-such.png"), "");
  EXPECT_NE(check_link("docs/cli.md", "/etc/passwd"), "");
  EXPECT_NE(check_link("docs/cli.md", "../../outside.md"), "");
  EXPECT_EQ(check_link("docs/cli.md", "../README.md#license"), "");
  EXPECT_EQ(slug("generate — images from seeds, as NVIDIA's generate.py"),
            "generate--images-from-seeds-as-nvidias-generatepy");
  EXPECT_EQ(links_of("a `[x](nowhere.md)` b\n```\n[y](nowhere.md)\n```\n[z](here.md)\n").size(), 1u);
}

// Every --outdir of a command the pages show (a code-block line starting with "$ ", "build/" or
// "sg2 ") is under out/: the tour and the examples never write into the source tree. Lines of
// cluster launchers (srun, mpirun) write to a cluster's scratch space and are not commands to paste here.
TEST(Docs, EveryCommandShownWritesUnderOut) {
  static const std::regex outdir("--outdir[ =]([^ ]+)");
  int outdirs = 0, in_readme = 0;
  for (const std::string& page : doc_pages()) {
    bool code = false;
    for (const std::string& raw : lines_of(slurp(source_path(page)))) {
      if (is_fence(raw)) code = !code;
      const std::string line = raw.substr(std::min(raw.size(), raw.find_first_not_of(' ')));
      if (!code || (line.rfind("$ ", 0) != 0 && line.rfind("build/", 0) != 0 && line.rfind("sg2 ", 0) != 0)) continue;
      for (std::sregex_iterator it(line.begin(), line.end(), outdir), end; it != end; ++it) {
        const std::string d = (*it)[1];
        ++outdirs;
        in_readme += page == "README.md";
        EXPECT_TRUE(d == "out" || d.rfind("out/", 0) == 0)
            << page << ": --outdir " << d << " is not under out/ (" << line << ")";
      }
    }
  }
  EXPECT_GE(in_readme, 5);
  EXPECT_GE(outdirs, 12);
}

TEST(Docs, EmbeddingShowsTheExamplesAsBuilt) {
  const std::string page = slurp(source_path("docs/embedding.md"));
  for (const char* f : {"apps/examples/embed.cpp", "apps/examples/stream.cpp", "apps/examples/embed_c.c"}) {
    const std::string text = slurp(source_path(f));
    ASSERT_GT(text.size(), 500u) << f;
    EXPECT_NE(page.find(text), std::string::npos) << "docs/embedding.md does not show " << f << " as it is";
  }
  for (const char* needed : {"# Embedding sg2 in a program", "cmake --install build --prefix",
                             "find_package(sg2 REQUIRED)", "sg2::sg2", "sg2/sg2_c.h", "scripts/test_install.sh"})
    EXPECT_NE(page.find(needed), std::string::npos) << needed;
}
