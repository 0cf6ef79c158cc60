var indexSectionsWithContent =
{
  0: "abcdefghijklmnopqrstuvwxz",
  1: "abcdefghilmnoprstv",
  2: "m",
  3: "abcdefghijlmoprst",
  4: "abcdefghilmnopqrstuvwz",
  5: "abcdefghiklmnoprstuw",
  6: "abcdfghilmnoprstuv",
  7: "adeiklt",
  8: "bdgikrwx",
  9: "op",
  10: "m",
  11: "m",
  12: "m"
};

var indexSectionNames =
{
  0: "all",
  1: "classes",
  2: "namespaces",
  3: "files",
  4: "functions",
  5: "variables",
  6: "typedefs",
  7: "enums",
  8: "enumvalues",
  9: "related",
  10: "defines",
  11: "pages",
  12: "concepts"
};

var indexSectionLabels =
{
  0: "All",
  1: "Classes",
  2: "Namespaces",
  3: "Files",
  4: "Functions",
  5: "Variables",
  6: "Typedefs",
  7: "Enumerations",
  8: "Enumerator",
  9: "Friends",
  10: "Macros",
  11: "Pages",
  12: "Concepts"
};

