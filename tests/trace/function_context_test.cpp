// Naming the enclosing function from GCC's and Clang's signatures, as the seed's decorator names
// it by __qualname__.
#include <gtest/gtest.h>

#include "gpumem/trace.hpp"

namespace gpumem {
namespace {

TEST(FunctionContext, PlainAndMemberFunctions) {
  EXPECT_EQ(function_context("int main()"), "main");
  EXPECT_EQ(function_context("int main(int, char**)"), "main");
  EXPECT_EQ(function_context("void some_func()"), "some_func");
  EXPECT_EQ(function_context("void Model::forward(int)"), "Model::forward");
  EXPECT_EQ(function_context("virtual void Model::forward(const Tensor&) const"), "Model::forward");
  EXPECT_EQ(function_context("static void ns::Trainer::fit(int, double)"), "Trainer::fit");
  EXPECT_EQ(function_context("Model::Model()"), "Model::Model");
  EXPECT_EQ(function_context("Model::~Model()"), "Model::~Model");
}

TEST(FunctionContext, ReturnTypesAndTemplates) {
  EXPECT_EQ(function_context("std::vector<int, std::allocator<int> > ns::make_list(int)"),
            "ns::make_list");
  EXPECT_EQ(function_context("void ns::Box<T>::fill(T) [with T = int]"), "Box::fill");
  EXPECT_EQ(function_context("auto run(F) [F = (lambda at a.cpp:3:5)]"), "run");
  EXPECT_EQ(function_context("std::function<void (int)> make_callback()"), "make_callback");
  EXPECT_EQ(function_context("const char* Model::name() const noexcept"), "Model::name");
}

TEST(FunctionContext, OperatorsAndLambdas) {
  EXPECT_EQ(function_context("bool Key::operator<(const Key&) const"), "Key::operator<");
  EXPECT_EQ(function_context("void Step::operator()()"), "Step::operator()");
  EXPECT_EQ(function_context("Key::operator int() const"), "Key::operator int");
  // In a lambda: the function that encloses it.
  EXPECT_EQ(function_context("Model::forward(int)::<lambda()>"), "Model::forward");
  EXPECT_EQ(function_context("auto Model::forward(int)::(anonymous class)::operator()() const"),
            "Model::forward");
}

TEST(FunctionContext, UnnamedNamespacesAreDropped) {
  EXPECT_EQ(function_context("void {anonymous}::helper()"), "helper");
  EXPECT_EQ(function_context("void (anonymous namespace)::helper()"), "helper");
  EXPECT_EQ(function_context("void (anonymous namespace)::Widget::draw()"), "Widget::draw");
}

struct Widget {
  std::string name() const { return function_context(__PRETTY_FUNCTION__); }
  static std::string make() { return function_context(__PRETTY_FUNCTION__); }
};
std::string free_function() {
  return function_context(__PRETTY_FUNCTION__);
}

TEST(FunctionContext, FromThisCompilersPrettyFunction) {
  EXPECT_EQ(Widget{}.name(), "Widget::name");
  EXPECT_EQ(Widget::make(), "Widget::make");
  // A signature cannot tell a namespace from a class: the innermost scope is kept either way.
  EXPECT_EQ(free_function(), "gpumem::free_function");
}

}  // namespace
}  // namespace gpumem
